/**
 * Housekeeping on the real PostgreSQL, where processes meet: one process takes a chore at a time,
 * one sweep holds the orphan sweep's mark at a time (another judges nothing and does not wait), and
 * a sweep reads the results stored since the last one through results_created, not what is kept.
 */
import { Effect, Layer } from "effect"
import type { Context } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { AccountStore, Ids, MediaStore, TaskStore } from "@taskmeter/kernel"
import { PgStore } from "../src/index.ts"
import * as OrphanSweep from "../src/internal/PgOrphanSweep.ts"
import { dropSchemaAfter, schemaName, url } from "./TestDatabase.ts"

const T0 = new Date("2030-01-01T00:00:00.000Z")
const at = (seconds: number): Date => new Date(T0.getTime() + seconds * 1000)

type Process = Context.Context<PgStore.Stores | SqlClient.SqlClient>

/** Two stores ("processes") on one fresh schema, for the scope of the test. */
const twoProcesses = Effect.gen(function* () {
  const schema = schemaName()
  yield* Layer.build(dropSchemaAfter(schema))
  const start = Layer.build(PgStore.layer({ url, schema, maxConnections: 8 }))
  return yield* Effect.all([start, start], { concurrency: 2 })
})

const on =
  (process: Process) =>
  <A, E>(effect: Effect.Effect<A, E, PgStore.Stores | SqlClient.SqlClient>) =>
    Effect.provide(effect, process)

const purge = (createdBefore: Date, limit: number) =>
  MediaStore.MediaStore.use((store) => store.purgeOrphanResults(createdBefore, limit))

/**
 * `count` tasks of a new account in `status` (succeeded ones charged their price), each with one
 * result created at `createdAt`, which a succeeded task's assets name; written in bulk.
 */
const prefill = (count: number, status: "succeeded" | "failed", createdAt: Date) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const account = yield* AccountStore.AccountStore.use((store) =>
      store.createAccount({ id: Ids.makeAccountId(), name: "sweeps", createdAt: T0 })
    )
    const prefix = `${status}-${Ids.makeTaskId()}`
    yield* sql`INSERT INTO tasks (id, account_id, model, input, status, price_micros, unit_micros, quantity, settlement,
        charged_micros, assets, created_at, updated_at, deadline_at)
      SELECT ${prefix} || '-' || g, ${account.id}, 'sweeps', '{}', ${status},
        1, 1, 1, 'fixed', CASE WHEN ${status} = 'succeeded' THEN 1 END,
        CASE WHEN ${status} = 'succeeded'
          THEN jsonb_build_array(jsonb_build_object('id', 'a', 'type', 'image', 'resultId', ${prefix} || '-r-' || g, 'mimeType', 'image/png'))
          ELSE '[]' END,
        ${createdAt}, ${createdAt}, ${createdAt}
      FROM generate_series(1, ${count}) g`
    yield* sql`INSERT INTO results (id, account_id, task_id, content_type, size_bytes, sha256, blob_key, created_at, expires_at)
      SELECT ${prefix} || '-r-' || g, ${account.id}, ${prefix} || '-' || g, 'image/png', 1, repeat('b', 64),
        'results/' || ${prefix} || '-r-' || g, ${createdAt}, ${createdAt}::timestamptz + interval '30 days'
      FROM generate_series(1, ${count}) g`
    yield* sql`ANALYZE results`
    yield* sql`ANALYZE tasks`
  })

interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly "Actual Rows"?: number
  readonly Plans?: ReadonlyArray<PlanNode>
}

const nodesOf = (node: PlanNode): ReadonlyArray<PlanNode> => [node, ...(node.Plans ?? []).flatMap(nodesOf)]

describe("bounded housekeeping on PostgreSQL", () => {
  it.live("of two processes taking a chore at once, one takes it", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const [first, second] = yield* twoProcesses
        const take = (process: Process, holder: string) =>
          on(process)(
            TaskStore.TaskStore.use((store) =>
              store.takeChore({ name: "sweep-orphan-results", holder, now: T0, leaseMs: 600_000, everyMs: 3_600_000 })
            )
          )
        const taken = yield* Effect.all(
          Array.from({ length: 16 }, (_, index) => take(index % 2 === 0 ? first : second, `holder-${index}`)),
          { concurrency: "unbounded" }
        )
        expect(taken.filter(Boolean)).toHaveLength(1)
      })
    )
  )

  it.live("a sweep while another holds the mark judges nothing and does not wait; after it, it judges", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const [first, second] = yield* twoProcesses
        yield* on(first)(prefill(5, "failed", T0))
        const sql = first.mapUnsafe.get(SqlClient.SqlClient.key) as SqlClient.SqlClient
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`SELECT 1 FROM sweep_marks WHERE name = 'orphan_results' FOR UPDATE`
            const held = yield* on(second)(purge(at(1), 100)).pipe(Effect.timeout("5 seconds"))
            expect(held).toEqual({ purged: [], judged: 0 })
          })
        )
        const after = yield* on(second)(purge(at(1), 100))
        expect([after.judged, after.purged.length]).toEqual([5, 5])
      })
    )
  )

  it.live("a sweep reads the results stored since the last one through results_created, however many are kept", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const [first] = yield* twoProcesses
        yield* on(first)(prefill(20_000, "succeeded", T0))
        let judged = 0
        for (;;) {
          const pass = yield* on(first)(purge(at(1), 1_000))
          expect(pass.purged).toEqual([])
          judged += pass.judged
          if (pass.judged < 1_000) break
        }
        expect(judged).toBe(20_000)

        yield* on(first)(prefill(3, "failed", at(10)))
        const sql = first.mapUnsafe.get(SqlClient.SqlClient.key) as SqlClient.SqlClient
        const [mark] = yield* sql<OrphanSweep.Mark>`SELECT created_at, id FROM sweep_marks WHERE name = 'orphan_results'`
        const [
          {
            "QUERY PLAN": [explained]
          }
        ] = yield* sql<{
          readonly "QUERY PLAN": ReadonlyArray<{ readonly Plan: PlanNode }>
        }>`EXPLAIN (ANALYZE, FORMAT JSON) ${OrphanSweep.window(sql, mark!, at(20), 1_000)}`
        const resultScans = nodesOf(explained!.Plan).filter((node) => node["Relation Name"] === "results")
        expect(resultScans.map((node) => [node["Node Type"], node["Index Name"], node["Actual Rows"]])).toEqual([
          ["Index Scan", "results_created", 3]
        ])

        const pass = yield* on(first)(purge(at(20), 1_000))
        expect([pass.judged, pass.purged.length]).toEqual([3, 3])
      })
    )
  )
})
