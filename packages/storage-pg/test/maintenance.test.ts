/**
 * PgMaintenance: where no autovacuum runs (this machine's PostgreSQL, PGlite), the tables that
 * outgrew their planner statistics by a tenth are analyzed, and the tables are vacuumed; a store
 * does both by itself. (That ANALYZE makes every connection plan its kept statements again is
 * PostgreSQL's: a test here cannot watch it, since any schema another test file creates or drops
 * makes every connection drop its plans.)
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { PgStore } from "../src/index.ts"
import * as PgMaintenance from "../src/internal/PgMaintenance.ts"
import { dropSchemaAfter, schemaName, temporaryDirectory, url } from "./TestDatabase.ts"

const T0 = new Date("2030-01-01T00:00:00.000Z")

/** The planner's row estimate of `tasks` and its pages the visibility map knows all visible. */
const tasksTable = SqlClient.SqlClient.use((sql) =>
  Effect.map(
    sql<{ readonly rows: number; readonly allVisible: number }>`SELECT reltuples::integer AS rows,
        relallvisible AS "allVisible" FROM pg_class WHERE oid = 'tasks'::regclass`,
    (rows) => rows[0]!
  )
)

/** `count` more failed tasks of one account (made with the first). */
const addTasks = (from: number, count: number) =>
  SqlClient.SqlClient.use((sql) =>
    Effect.gen(function* () {
      if (from === 1) yield* sql`INSERT INTO accounts (id, name, created_at) VALUES ('acct_upkeep', 'upkeep', ${T0})`
      yield* sql`INSERT INTO tasks (id, account_id, model, input, status, price_micros, unit_micros, quantity, settlement,
          created_at, updated_at, deadline_at)
        SELECT 'task_' || g, 'acct_upkeep', 'song-lyrics', '{}', 'failed', 0, 0, 1, 'fixed', ${T0}, ${T0}, ${T0}
        FROM generate_series(${from}::integer, ${from + count - 1}::integer) g`
    })
  )

/** A store in a fresh schema of the real PostgreSQL. */
const postgresStore = (options: { readonly analyzeEveryMs: number; readonly vacuumEveryMs: number }) =>
  Effect.gen(function* () {
    const schema = schemaName()
    yield* Layer.build(dropSchemaAfter(schema))
    return yield* Layer.build(PgStore.layer({ url, schema, maxConnections: 2, ...options }))
  })

describe("storage-pg: maintenance where no autovacuum runs", () => {
  it.live("a table is analyzed once it has rows, then each time it grows by a tenth", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* postgresStore({ analyzeEveryMs: 0, vacuumEveryMs: 0 })
        const passes = yield* Effect.gen(function* () {
          yield* PgMaintenance.analyzeGrown
          yield* addTasks(1, 30_000)
          const grown = yield* PgMaintenance.analyzeGrown
          const estimated = (yield* tasksTable).rows
          const unchanged = yield* PgMaintenance.analyzeGrown
          yield* addTasks(30_001, 1_000)
          const smallGrowth = yield* PgMaintenance.analyzeGrown
          yield* addTasks(31_001, 5_000)
          const tenthMore = yield* PgMaintenance.analyzeGrown
          return { grown, estimated, unchanged, smallGrowth, tenthMore, reestimated: (yield* tasksTable).rows }
        }).pipe(Effect.provide(store))
        expect(passes.grown).toContain("tasks")
        expect(passes.estimated).toBe(30_000)
        expect(passes.unchanged).toEqual([])
        expect(passes.smallGrowth).not.toContain("tasks")
        expect(passes.tenthMore).toContain("tasks")
        expect(passes.reestimated).toBe(36_000)
      })
    )
  )

  it.live("a store analyzes a grown table every analyzeEveryMs and vacuums it every vacuumEveryMs, by itself", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* postgresStore({ analyzeEveryMs: 200, vacuumEveryMs: 300 })
        const upkept = yield* Effect.gen(function* () {
          yield* addTasks(1, 30_000)
          for (let i = 0; i < 50; i++) {
            const table = yield* tasksTable
            if (table.rows > 0 && table.allVisible > 0) return table
            yield* Effect.sleep(100)
          }
          return yield* tasksTable
        }).pipe(Effect.provide(store))
        // Never analyzed nor vacuumed, a table has no row estimate (-1) and no page known all visible.
        expect(upkept.rows).toBe(30_000)
        expect(upkept.allVisible).toBeGreaterThan(0)
      })
    )
  )

  it.live(
    "on PGlite, which runs no autovacuum, grown tables are analyzed once and the tables vacuumed",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const dataDir = yield* temporaryDirectory("taskmeter-maintenance-")
          const store = yield* Layer.build(PgStore.layerEmbedded({ dataDir }))
          const found = yield* Effect.gen(function* () {
            const runs = yield* PgMaintenance.autovacuumRuns
            yield* PgMaintenance.analyzeGrown
            yield* addTasks(1, 3_000)
            const first = yield* PgMaintenance.analyzeGrown
            const second = yield* PgMaintenance.analyzeGrown
            const vacuumed = yield* PgMaintenance.vacuumTables
            return { runs, first, second, vacuumed, after: yield* tasksTable }
          }).pipe(Effect.provide(store))
          expect(found.runs).toBe(false)
          expect(found.first).toContain("tasks")
          expect(found.second).toEqual([])
          expect(found.vacuumed).toContain("tasks")
          expect(found.after.allVisible).toBeGreaterThan(0)
        })
      ),
    120_000
  )
})
