/**
 * PgStatistics: where no autovacuum runs (this machine's PostgreSQL, PGlite), the tables that
 * outgrew their planner statistics are analyzed, and the statements a connection planned on them
 * while they were nearly empty are planned again. The statement watched is the worker's status
 * change (`transitionAll`: tasks matched to the batch by a join), whose plan made on a nearly empty
 * `tasks` reads every task.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { TaskStore } from "@taskmeter/kernel"
import type { Ids } from "@taskmeter/kernel"
import { PgStore } from "../src/index.ts"
import * as PgStatistics from "../src/internal/PgStatistics.ts"
import { dropSchemaAfter, schemaName, temporaryDirectory, url } from "./TestDatabase.ts"

const T0 = new Date("2030-01-01T00:00:00.000Z")
const BATCH = 30

/** The `tasks` rows (this transaction's counters) that moving `BATCH` new tasks (ids `prefix-1`...) from submitting to running read. */
const moveReads = (prefix: string) =>
  SqlClient.SqlClient.use((sql) =>
    Effect.gen(function* () {
      yield* sql`INSERT INTO tasks (id, account_id, model, input, status, price_micros, unit_micros, quantity, settlement,
          created_at, updated_at, deadline_at, lease_token, lease_expires_at)
        SELECT ${prefix}::text || '-' || g, 'acct_stats', 'song-lyrics', '{}', 'submitting', 0, 0, 1, 'fixed',
          ${T0}, ${T0}, ${T0}, 'lease', ${T0}::timestamptz + interval '1 hour' FROM generate_series(1, ${BATCH}) g`
      const reads = Effect.map(
        sql<{ readonly n: string }>`SELECT seq_tup_read + coalesce(idx_tup_fetch, 0) AS n
          FROM pg_stat_xact_user_tables WHERE relid = 'tasks'::regclass`,
        (rows) => Number(rows[0]!.n)
      )
      const before = yield* reads
      const moved = yield* TaskStore.TaskStore.use((tasks) =>
        tasks.transitionAll(
          Array.from({ length: BATCH }, (_, i) => ({
            taskId: `${prefix}-${i + 1}` as Ids.TaskId,
            leaseToken: "lease",
            from: "submitting" as const,
            to: "running" as const,
            now: T0,
            keepLease: true
          }))
        )
      )
      expect(moved.every((result) => result._tag === "Done")).toBe(true)
      return (yield* reads) - before
    })
  )

const growTasks = SqlClient.SqlClient.use(
  (sql) => sql`INSERT INTO tasks (id, account_id, model, input, status, price_micros, unit_micros, quantity, settlement,
      created_at, updated_at, deadline_at)
    SELECT 'seeded-' || g, 'acct_stats', 'song-lyrics', '{}', 'failed', 0, 0, 1, 'fixed', ${T0}, ${T0}, ${T0}
    FROM generate_series(1, 30000) g`
)

describe("storage-pg: planner statistics where no autovacuum runs", () => {
  it.live(
    "a status change planned on a nearly empty tasks table scans 30,000 tasks until the grown table is analyzed",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const schema = schemaName()
          yield* Layer.build(dropSchemaAfter(schema))
          // The passes are run by hand.
          const store = yield* Layer.build(PgStore.layer({ url, schema, maxConnections: 2, analyzeEveryMs: 0 }))
          const sql = Context.get(store, SqlClient.SqlClient)
          expect(yield* Effect.provide(PgStatistics.autovacuumRuns, store)).toBe(false)
          // One transaction on one connection: the plans kept are those made first, on the nearly empty table.
          const measured = yield* sql
            .withTransaction(
              Effect.gen(function* () {
                yield* sql`SET LOCAL plan_cache_mode = force_generic_plan`
                yield* sql`INSERT INTO accounts (id, name, created_at) VALUES ('acct_stats', 'stats', ${T0})`
                for (let i = 0; i < 6; i++) yield* moveReads(`warm-${i}`)
                yield* growTasks
                const stale = yield* moveReads("stale")
                const analyzed = yield* PgStatistics.analyzeGrown
                const current = yield* moveReads("current")
                const again = yield* PgStatistics.analyzeGrown
                return { stale, analyzed, current, again }
              })
            )
            .pipe(Effect.provide(store))
          // The plan made on the nearly empty table reads every task.
          expect(measured.stale).toBeGreaterThan(30_000)
          expect(measured.analyzed).toContain("tasks")
          // Planned again on the analyzed table: the batch's own tasks, by primary key.
          expect(measured.current).toBeLessThanOrEqual(2 * BATCH)
          // Statistics now match the tables: nothing to do.
          expect(measured.again).toEqual([])
        })
      ),
    120_000
  )

  it.live("a store analyzes a grown table by itself, every analyzeEveryMs", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const schema = schemaName()
        yield* Layer.build(dropSchemaAfter(schema))
        const store = yield* Layer.build(PgStore.layer({ url, schema, maxConnections: 2, analyzeEveryMs: 200 }))
        const sql = Context.get(store, SqlClient.SqlClient)
        yield* Effect.provide(
          Effect.andThen(sql`INSERT INTO accounts (id, name, created_at) VALUES ('acct_stats', 'stats', ${T0})`, growTasks),
          store
        )
        const estimated = sql<{
          readonly rows: number
        }>`SELECT reltuples::integer AS rows FROM pg_class WHERE oid = 'tasks'::regclass`
        const waited = yield* Effect.gen(function* () {
          for (let i = 0; i < 50; i++) {
            const [row] = yield* estimated
            if (row!.rows > 0) return row!.rows
            yield* Effect.sleep(100)
          }
          return -1
        })
        expect(waited).toBe(30_000)
      })
    )
  )

  it.live("on PGlite, which runs no autovacuum, grown tables are analyzed once", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dataDir = yield* temporaryDirectory("taskmeter-statistics-")
        const store = yield* Layer.build(PgStore.layerEmbedded({ dataDir }))
        const found = yield* Effect.gen(function* () {
          const runs = yield* PgStatistics.autovacuumRuns
          yield* PgStatistics.analyzeGrown
          yield* SqlClient.SqlClient.use(
            (sql) => sql`INSERT INTO accounts (id, name, created_at) VALUES ('acct_stats', 'stats', ${T0})`
          )
          yield* growTasks
          const first = yield* PgStatistics.analyzeGrown
          const second = yield* PgStatistics.analyzeGrown
          return { runs, first, second }
        }).pipe(Effect.provide(store))
        expect(found.runs).toBe(false)
        expect(found.first).toContain("tasks")
        expect(found.second).toEqual([])
      })
    )
  )
})
