/**
 * What autovacuum does, where none runs: on a PostgreSQL without an autovacuum launcher
 * (`autovacuum = off`; PGlite, which runs none), this process ANALYZEs every `analyzeEveryMs` the
 * schema's tables that grew by a tenth (and a page) since their last statistics, or have rows but
 * none (one process per schema at a time), so the plans every connection keeps on them are made
 * again; and VACUUMs every `vacuumEveryMs` each of the schema's tables that no other process is
 * vacuuming, so dead row versions are reclaimed and transaction ids frozen before wraparound stops
 * writes (docs/decisions.md, Storage). Where a launcher runs, it does nothing.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** How often grown tables are looked for, by default. */
export const DEFAULT_ANALYZE_EVERY_MS = 60_000

/** How often the tables are vacuumed, by default. */
export const DEFAULT_VACUUM_EVERY_MS = 3_600_000

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

/**
 * VACUUMs the current schema's tables one statement each (PGlite runs other connections' work
 * between them), passing over a table another process is vacuuming; their names.
 */
export const vacuumTables = SqlClient.SqlClient.use((sql) =>
  Effect.gen(function* () {
    const tables = yield* sql<{ readonly name: string }>`SELECT c.relname AS name FROM pg_class c
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' ORDER BY c.relname`
    for (const { name } of tables) yield* sql`VACUUM (SKIP_LOCKED) ${sql(name)}`.unprepared
    return tables.map(({ name }) => name)
  })
)

/** Runs `pass` every `everyMs` while the scope is open; a failed pass is tried again at the next tick. */
const every = (everyMs: number, pass: Effect.Effect<unknown, unknown, SqlClient.SqlClient>) =>
  everyMs === 0 ? Effect.void : Effect.forkScoped(Effect.forever(Effect.delay(Effect.ignore(pass), everyMs)))

/** Keeps the passes running while the scope is open, if no autovacuum launcher serves the database; 0 turns one off. */
export const keep = (options: { readonly analyzeEveryMs?: number | undefined; readonly vacuumEveryMs?: number | undefined }) =>
  Effect.gen(function* () {
    if (yield* Effect.orElseSucceed(autovacuumRuns, () => true)) return
    yield* every(options.analyzeEveryMs ?? DEFAULT_ANALYZE_EVERY_MS, analyzeGrown)
    yield* every(options.vacuumEveryMs ?? DEFAULT_VACUUM_EVERY_MS, vacuumTables)
  })
