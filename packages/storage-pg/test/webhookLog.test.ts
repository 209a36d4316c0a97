/**
 * The webhook log on the real PostgreSQL, at a size where plans matter: the purge deletes the
 * oldest finished deliveries with their attempts, reading them through webhook_deliveries_finished,
 * and a task's deliveries are read through webhook_deliveries_task_newest.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { WebhookStore } from "@taskmeter/kernel"
import type { Ids } from "@taskmeter/kernel"
import { PgStore } from "../src/index.ts"
import { dropSchemaAfter, schemaName, url } from "./TestDatabase.ts"

const T0 = new Date("2030-01-01T00:00:00.000Z")
const DAY = 24 * 60 * 60_000

interface PlanNode {
  readonly "Node Type": string
  readonly "Index Name"?: string
  readonly Plans?: ReadonlyArray<PlanNode>
}

const indexesOf = (node: PlanNode): ReadonlyArray<string> => [
  ...(node["Index Name"] === undefined ? [] : [node["Index Name"]]),
  ...(node.Plans ?? []).flatMap(indexesOf)
]

/** `count` deliveries of task `task-<g>` finished at `finishedAt` (null: pending), each with two attempts. */
const prefill = (prefix: string, count: number, finishedAt: Date | null) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`INSERT INTO webhook_deliveries (id, account_id, url, task_id, event_type, task, occurred_at, status, due_at,
        created_at, finished_at)
      SELECT ${prefix} || g, 'acct_log', 'https://hooks.example.com/', 'task-' || ${prefix} || g, 'task.succeeded', '{}', ${T0},
        CASE WHEN ${finishedAt}::timestamptz IS NULL THEN 'pending' ELSE 'delivered' END,
        CASE WHEN ${finishedAt}::timestamptz IS NULL THEN ${T0}::timestamptz END, ${T0}, ${finishedAt}
      FROM generate_series(1, ${count}) g`
    yield* sql`INSERT INTO webhook_attempts (delivery_id, at, status_code, latency_ms)
      SELECT ${prefix} || g, ${T0}, 200, 5 FROM generate_series(1, ${count}) g, generate_series(1, 2) n`
  })

describe("the webhook log on PostgreSQL", () => {
  it.live("purges the oldest finished deliveries with their attempts through the finish-time index", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const schema = schemaName()
        yield* Layer.build(dropSchemaAfter(schema))
        const context = yield* Layer.build(PgStore.layer({ url, schema, maxConnections: 2 }))
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* prefill("old-", 3_000, new Date(T0.getTime() + DAY))
          yield* prefill("new-", 3_000, new Date(T0.getTime() + 40 * DAY))
          yield* prefill("due-", 3_000, null)
          yield* sql`ANALYZE webhook_deliveries`
          yield* sql`ANALYZE webhook_attempts`
          const cutoff = new Date(T0.getTime() + 10 * DAY)
          const [purgePlan] = yield* sql<{
            readonly "QUERY PLAN": ReadonlyArray<{ readonly Plan: PlanNode }>
          }>`EXPLAIN (FORMAT JSON)
            SELECT id FROM webhook_deliveries WHERE finished_at IS NOT NULL AND finished_at < ${cutoff}
            ORDER BY finished_at LIMIT 1000`
          expect(indexesOf(purgePlan!["QUERY PLAN"][0]!.Plan)).toEqual(["webhook_deliveries_finished"])
          const [taskPlan] = yield* sql<{
            readonly "QUERY PLAN": ReadonlyArray<{ readonly Plan: PlanNode }>
          }>`EXPLAIN (FORMAT JSON)
            SELECT id FROM webhook_deliveries WHERE task_id = 'task-new-7' AND account_id = 'acct_log' ORDER BY seq DESC LIMIT 101`
          expect(indexesOf(taskPlan!["QUERY PLAN"][0]!.Plan)).toEqual(["webhook_deliveries_task_newest"])

          const store = yield* WebhookStore.WebhookStore
          expect(yield* store.purgeFinished(cutoff, 1_000)).toBe(1_000)
          const [left] = yield* sql<{ readonly old: number; readonly attempts: number; readonly orphans: number }>`SELECT
              (SELECT count(*)::int FROM webhook_deliveries WHERE id LIKE 'old-%') AS old,
              (SELECT count(*)::int FROM webhook_attempts) AS attempts,
              (SELECT count(*)::int FROM webhook_attempts a WHERE NOT EXISTS
                (SELECT 1 FROM webhook_deliveries w WHERE w.id = a.delivery_id)) AS orphans`
          expect(left).toEqual({ old: 2_000, attempts: (9_000 - 1_000) * 2, orphans: 0 })
          expect(yield* store.purgeFinished(cutoff, 5_000)).toBe(2_000)
          expect(yield* store.purgeFinished(cutoff, 5_000)).toBe(0)
          const [kept] = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM webhook_deliveries`
          expect(kept!.n).toBe(6_000)
          const log = yield* store.listTaskDeliveries("acct_log" as Ids.AccountId, "task-new-7" as Ids.TaskId, 10)
          expect(log.map((d) => [d.id, d.attempts.length])).toEqual([["new-7", 2]])
        }).pipe(Effect.provide(context))
      })
    )
  )
})
