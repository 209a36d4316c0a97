/**
 * The `purge-webhook-log` chore on a test clock: hourly, it deletes the deliveries finished longer
 * than the retention ago in batches of `batchSize`, keeping pending and more recent ones.
 */
import { Clock, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "@effect/vitest"
import { MemoryStore } from "@taskmeter/storage-memory"
import type { AccountId } from "../../src/domain/Ids.ts"
import { micros } from "../../src/domain/Money.ts"
import * as Housekeeping from "../../src/tasks/Housekeeping.ts"
import { TaskStore } from "../../src/tasks/TaskStore.ts"
import { WebhookStore } from "../../src/webhooks/WebhookStore.ts"
import { admission, admitted, claimTask, fundedAccount, newTask, USD } from "../../src/testing/Fixtures.ts"

const HOUR = 60 * 60_000

/** The memory stores, recording each purge as [limit, deleted]. */
const recordingStore = () => {
  const purges: Array<readonly [number, number]> = []
  const layer = Layer.effect(
    WebhookStore,
    Effect.gen(function* () {
      const store = yield* WebhookStore
      return WebhookStore.of({
        ...store,
        purgeFinished: (finishedBefore, limit) =>
          Effect.tap(store.purgeFinished(finishedBefore, limit), (deleted) =>
            Effect.sync(() => void purges.push([limit, deleted]))
          )
      })
    })
  ).pipe(Layer.provideMerge(MemoryStore.layer))
  return { purges, layer }
}

/** Settles a task as succeeded now (raising one delivery to the account's endpoint) and, unless `pending`, finishes its delivery. */
const deliveredNow = (accountId: AccountId, outcome: "Delivered" | "Failed" | "pending") =>
  Effect.gen(function* () {
    const now = new Date(yield* Clock.currentTimeMillis)
    const store = yield* TaskStore
    const task = yield* admitted(admission(newTask(accountId, { createdAt: now })))
    const { leaseToken } = yield* claimTask(task.id, now)
    for (const [from, to] of [
      ["queued", "submitting"],
      ["submitting", "succeeded"]
    ] as const) {
      const moved = yield* store.transition({
        taskId: task.id,
        leaseToken,
        from,
        to,
        now,
        keepLease: to === "submitting",
        ...(to === "succeeded" ? { chargeMicros: micros(USD) } : {})
      })
      expect(moved._tag).toBe("Done")
    }
    if (outcome === "pending") return
    const webhooks = yield* WebhookStore
    const [claim] = yield* webhooks.claim({ limit: 1, leaseMs: 60_000, now })
    yield* webhooks.recordRound(
      [
        {
          deliveryId: claim!.delivery.id,
          leaseToken: claim!.leaseToken,
          attempt: { at: now, statusCode: 500, latencyMs: 5, responseExcerpt: null, error: "HTTP 500" },
          outcome: { _tag: outcome }
        }
      ],
      now
    )
  })

describe("Housekeeping of the webhook log", () => {
  it.effect("purges deliveries finished longer than the retention ago, hourly, in batches, keeping the rest", () => {
    const { purges, layer } = recordingStore()
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(10 * USD)
      const hook = yield* WebhookStore.use((store) =>
        store.createEndpoint({
          id: "whep_purge",
          accountId,
          url: "https://hooks.example.com/",
          events: ["task.succeeded"],
          secret: "whsec_purge",
          now: new Date(0)
        })
      )
      const log = () =>
        Effect.map(
          WebhookStore.use((store) => store.listDeliveries(accountId, hook.id, 100)),
          (deliveries) => deliveries!.map((d) => d.status)
        )
      yield* deliveredNow(accountId, "Delivered")
      yield* deliveredNow(accountId, "Failed")
      yield* deliveredNow(accountId, "Delivered")
      yield* TestClock.adjust(2 * HOUR)
      yield* deliveredNow(accountId, "Failed")
      yield* deliveredNow(accountId, "pending")
      yield* Effect.forkChild(Housekeeping.run({ batchSize: 2, webhookLogRetentionMs: 24 * HOUR }))
      yield* TestClock.adjust(0)
      expect(purges).toEqual([[2, 0]])
      // At 24 hours the first three are exactly as old as the retention: kept.
      yield* TestClock.adjust(22 * HOUR)
      expect(yield* log()).toHaveLength(5)
      expect(purges).toHaveLength(23)
      yield* TestClock.adjust(HOUR)
      expect(purges.slice(23)).toEqual([
        [2, 2],
        [2, 1]
      ])
      expect(yield* log()).toEqual(["pending", "failed"])
      yield* TestClock.adjust(2 * HOUR)
      expect(yield* log()).toEqual(["pending"])
      yield* TestClock.adjust(30 * 24 * HOUR)
      expect(yield* log()).toEqual(["pending"])
    }).pipe(Effect.provide(layer))
  })

  it.effect("keeps deliveries for 30 days by default", () =>
    Effect.gen(function* () {
      expect(Housekeeping.defaults.webhookLogRetentionMs).toBe(30 * 24 * HOUR)
      const accountId = yield* fundedAccount(10 * USD)
      yield* WebhookStore.use((store) =>
        store.createEndpoint({
          id: "whep_default",
          accountId,
          url: "https://hooks.example.com/",
          events: ["task.succeeded"],
          secret: "whsec_default",
          now: new Date(0)
        })
      )
      yield* deliveredNow(accountId, "Delivered")
      yield* TestClock.adjust(30 * 24 * HOUR)
      expect(yield* Housekeeping.purgeWebhookLog()).toBe(0)
      yield* TestClock.adjust(1)
      expect(yield* Housekeeping.purgeWebhookLog()).toBe(1)
    }).pipe(Effect.provide(MemoryStore.layer))
  )
})
