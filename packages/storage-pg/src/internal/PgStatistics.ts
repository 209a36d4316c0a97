/**
 * Planner statistics kept current where the database keeps none: on a PostgreSQL without an
 * autovacuum launcher (`autovacuum = off`; PGlite, which runs none), every `everyMs` one process
 * per schema ANALYZEs the schema's tables that have grown by a tenth (and a page) since their last
 * statistics, or have rows but none. ANALYZE also makes every connection re-plan the statements it
 * keeps on those tables, so no plan made on a nearly empty table outlives its growth
 * (docs/decisions.md, Storage). Where a launcher runs, it does nothing.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** How often a process looks, by default. */
export const DEFAULT_EVERY_MS = 60_000

/** Whether an autovacuum launcher serves this database. */
export const autovacuumRuns = SqlClient.SqlClient.use((sql) =>
  Effect.map(
    sql<{ readonly runs: boolean }>`SELECT EXISTS (
        SELECT 1 FROM pg_stat_activity WHERE backend_type = 'autovacuum launcher') AS runs`,
    (rows) => rows[0]?.runs === true
  )
)

/**
 * ANALYZEs the current schema's tables whose size outgrew their statistics; the names of those it
 * analyzed. Nothing when another process is at it.
 */
export const analyzeGrown = SqlClient.SqlClient.use((sql) =>
  sql.withTransaction(
    Effect.gen(function* () {
      const [lock] = yield* sql<{ readonly taken: boolean }>`SELECT pg_try_advisory_xact_lock(
        hashtextextended('taskmeter statistics ' || current_schema(), 0)) AS taken`
      if (lock?.taken !== true) return []
      const grown = yield* sql<{ readonly name: string }>`SELECT c.relname AS name FROM pg_class c
        CROSS JOIN LATERAL (SELECT pg_relation_size(c.oid) / current_setting('block_size')::bigint AS pages) s
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
          AND CASE WHEN c.reltuples < 0 THEN s.pages > 0 ELSE s.pages > c.relpages + 1 + c.relpages / 10 END
        ORDER BY c.relname`
      for (const { name } of grown) yield* sql`ANALYZE ${sql(name)}`.unprepared
      return grown.map(({ name }) => name)
    })
  )
)

/** Looks every `everyMs` while the scope is open, if no autovacuum launcher serves the database. */
export const keep = (everyMs: number = DEFAULT_EVERY_MS) =>
  Effect.gen(function* () {
    if (yield* Effect.orElseSucceed(autovacuumRuns, () => true)) return
    // A failed pass is tried again at the next tick.
    yield* Effect.forkScoped(Effect.forever(Effect.delay(Effect.ignore(analyzeGrown), everyMs)))
  })
