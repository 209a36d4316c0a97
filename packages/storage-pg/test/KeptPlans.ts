/**
 * For tests that bound what a statement reads as its tables grow, under the plans a server's
 * connection keeps: `withKeptPlans` runs a body in one transaction on a fresh store with plans
 * forced generic (made on the first run, on whatever the tables then hold), and `rowsRead` counts
 * the rows a statement reads by scans and index fetches from this transaction's counters
 * (`pg_stat_xact_user_tables`; catalog reads, which other test files' schemas cause, not counted).
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { PgStore } from "../src/index.ts"
import { dropSchemaAfter, schemaName, url } from "./TestDatabase.ts"

/** `body` in one transaction of a store in a fresh schema (no maintenance passes), its plans forced generic. */
export const withKeptPlans = <A, E>(body: Effect.Effect<A, E, PgStore.Stores | SqlClient.SqlClient>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const schema = schemaName()
      yield* Layer.build(dropSchemaAfter(schema))
      const store = yield* Layer.build(PgStore.layer({ url, schema, maxConnections: 2, analyzeEveryMs: 0, vacuumEveryMs: 0 }))
      const sql = Context.get(store, SqlClient.SqlClient)
      return yield* sql
        .withTransaction(Effect.andThen(sql`SET LOCAL plan_cache_mode = force_generic_plan`, body))
        .pipe(Effect.provide(store))
    })
  )

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
