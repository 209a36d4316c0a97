/**
 * Test support for the operator queue: a task held in reconciliation_required, made through the
 * TaskStore port as a worker leaves it after an unknown outcome (OUTCOME_UNKNOWN).
 */
import { Effect } from "effect"
import { expect } from "@effect/vitest"
import * as Ids from "../domain/Ids.ts"
import type * as Money from "../domain/Money.ts"
import { TaskStore } from "../tasks/TaskStore.ts"

/**
 * A task of the account, admitted for `model` and moved to reconciliation_required, with the
 * upstream's last answer when given.
 */
export const make = (accountId: string, priceMicros: number, model = "song-lyrics", upstreamAnswer?: string) =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    const now = new Date()
    const id = Ids.makeTaskId()
    const price = priceMicros as Money.Micros
    const admitted = yield* store.admit({
      task: {
        id,
        accountId: accountId as Ids.AccountId,
        apiKeyId: null,
        model,
        input: { prompt: "a song about ledgers" },
        priceMicros: price,
        unitMicros: price,
        quantity: 1,
        settlement: "fixed",
        createdAt: now,
        deadlineAt: new Date(now.getTime() + 3_600_000)
      },
      idempotencyKey: `held-${id}`,
      fingerprint: id,
      idempotencyExpiresAt: new Date(now.getTime() + 3_600_000),
      limits: { submissionsPerMinute: 1000, maxUnfinishedTasks: 1000, keyUsageLimit: null }
    })
    expect(admitted._tag).toBe("Admitted")
    const [claim] = (yield* store.claim({ workerId: "test", limit: 10, leaseMs: 60_000, now, models: [model] })).filter(
      (c) => c.task.id === id
    )
    for (const [from, to] of [
      ["queued", "submitting"],
      ["submitting", "reconciliation_required"]
    ] as const) {
      const result = yield* store.transition({
        taskId: id,
        leaseToken: claim!.leaseToken,
        from,
        to,
        now,
        keepLease: true,
        errorCode: to === "reconciliation_required" ? "OUTCOME_UNKNOWN" : undefined,
        ...(upstreamAnswer === undefined ? {} : { upstreamAnswer })
      })
      expect(result._tag).toBe("Done")
    }
    return id
  })
