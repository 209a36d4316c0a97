/**
 * The rows a statement reads from tables, by scans and index fetches: this transaction's counters
 * (`pg_stat_xact_user_tables`), so the effect runs inside a transaction; catalog reads, which other
 * test files' schemas cause, are not counted. For tests that bound what a statement reads as its
 * tables grow.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** What `effect` returned, and per table of the current schema the rows it read. */
export const rowsRead = <T extends string, A, E, R>(tables: ReadonlyArray<T>, effect: Effect.Effect<A, E, R>) =>
  SqlClient.SqlClient.use((sql) =>
    Effect.gen(function* () {
      const counters = Effect.map(
        sql<{ readonly relname: string; readonly n: string }>`SELECT relname, seq_tup_read + coalesce(idx_tup_fetch, 0) AS n
          FROM pg_stat_xact_user_tables WHERE schemaname = current_schema() AND relname IN ${sql.in(tables)}`,
        (rows) => new Map(rows.map((row) => [row.relname, Number(row.n)]))
      )
      const before = yield* counters
      const value = yield* effect
      const after = yield* counters
      const reads = Object.fromEntries(
        tables.map((table) => [table, (after.get(table) ?? 0) - (before.get(table) ?? 0)])
      ) as Record<T, number>
      return { value, reads }
    })
  )
