/**
 * The revenue case of the ChatStore conformance suite: per UTC day and model, task charges and
 * releases from the ledger (a partial charge gives both), settled chat requests (not open ones)
 * merged into the same line as a task of the same model, only the period's rows, and refunds per day.
 */
import { Effect } from "effect"
import { expect } from "@effect/vitest"
import { ChatStore } from "../chat/ChatStore.ts"
import * as Ids from "../domain/Ids.ts"
import type { AccountId } from "../domain/Ids.ts"
import { micros } from "../domain/Money.ts"
import { TaskStore } from "../tasks/TaskStore.ts"
import type { NewTask } from "../tasks/TaskStore.ts"
import type { Stores } from "./Case.ts"
import { admission, admitted, allEntries, at, claimTask, fundedAccount, newTask, refund, T0, USD } from "./Fixtures.ts"

const DAY = 86_400

/** Admits, runs and finishes one task at `seconds`: charged `charge` micros, or failed when null. */
export const settledTask = (accountId: AccountId, task: Partial<NewTask>, seconds: number, charge: number | null) =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    const admittedTask = yield* admitted(admission(newTask(accountId, { createdAt: at(seconds), ...task })))
    const claim = yield* claimTask(admittedTask.id, at(seconds + 1))
    const step = (from: "queued" | "submitting" | "running", to: "submitting" | "running" | "succeeded" | "failed", s: number) =>
      store.transition({
        taskId: admittedTask.id,
        leaseToken: claim.leaseToken,
        from,
        to,
        now: at(seconds + s),
        keepLease: to !== "succeeded" && to !== "failed",
        ...(to === "succeeded" ? { chargeMicros: micros(charge ?? 0) } : {}),
        ...(to === "failed" ? { errorCode: "UPSTREAM_ERROR" } : {})
      })
    expect((yield* step("queued", "submitting", 2))._tag).toBe("Done")
    expect((yield* step("submitting", "running", 3))._tag).toBe("Done")
    expect((yield* step("running", charge === null ? "failed" : "succeeded", 4))._tag).toBe("Done")
  })

export const cases = (test: (title: string, body: Effect.Effect<void, unknown, Stores | ChatStore>) => void) => {
  test(
    "the revenue report sums task ledger entries and settled chat requests per UTC day and model, within the period",
    Effect.gen(function* () {
      const store = yield* ChatStore
      const accountId = yield* fundedAccount(20 * USD)
      const image = `rev-image-${Ids.makeTaskId()}`
      const video = `rev-video-${Ids.makeTaskId()}`
      // Day one: a full charge and a partial one (charge 750_000, release 250_000) of image, a failed video.
      yield* settledTask(accountId, { model: image, priceMicros: micros(2 * USD), unitMicros: micros(2 * USD) }, 10, 2 * USD)
      yield* settledTask(accountId, { model: image, settlement: "perDeliveredUnit" }, 20, 750_000)
      yield* settledTask(accountId, { model: video }, 30, null)
      // A chat request of the image model's name joins its line; an open one counts nowhere.
      const chat = (model: string, seconds: number) =>
        store.open(
          {
            id: Ids.makeChatRequestId(),
            accountId,
            apiKeyId: null,
            model,
            reservedMicros: micros(USD),
            tiers: [{ upToPromptTokens: null, promptMicrosPerMillion: micros(1), completionMicrosPerMillion: micros(1) }],
            createdAt: at(seconds)
          },
          { requestsPerMinute: 1_000_000, maxOpenRequests: 1_000_000, keyUsageLimit: null }
        )
      const settleChat = (model: string, seconds: number, charge: number, cost: number, shortfall: number) =>
        Effect.gen(function* () {
          const opened = yield* chat(model, seconds)
          if (opened._tag !== "Opened") return expect.unreachable(opened._tag)
          yield* store.settle({
            id: opened.record.id,
            status: "succeeded",
            usage: { promptTokens: 10, completionTokens: 10 },
            finishReason: "stop",
            errorCode: null,
            chargeMicros: micros(charge),
            completedAt: at(seconds + 1),
            upstream: "primary",
            upstreamCostMicros: micros(cost),
            shortfallMicros: micros(shortfall)
          })
        })
      yield* settleChat(image, 40, 100_000, 60_000, 0)
      // Day two: chat only; one more the next day lies outside the period.
      yield* settleChat("rev-chat", DAY + 5, 300_000, 120_000, 40_000)
      yield* settleChat("rev-chat", DAY + 6, 200_000, 80_000, 0)
      const open = yield* chat("rev-chat", DAY + 7)
      if (open._tag !== "Opened") return expect.unreachable(open._tag)
      yield* settleChat("rev-chat", 2 * DAY, 999, 999, 999)

      const report = yield* store.revenue({ from: T0, to: at(2 * DAY) })
      const line = {
        tasksCharged: 0,
        taskChargedMicros: 0,
        tasksReleased: 0,
        taskReleasedMicros: 0,
        chatRequests: 0,
        chatChargedMicros: 0,
        chatUpstreamCostMicros: 0,
        chatShortfallMicros: 0
      }
      expect(report.rows).toEqual([
        {
          ...line,
          day: "2030-01-01",
          model: image,
          tasksCharged: 2,
          taskChargedMicros: 2 * USD + 750_000,
          tasksReleased: 1,
          taskReleasedMicros: 250_000,
          chatRequests: 1,
          chatChargedMicros: 100_000,
          chatUpstreamCostMicros: 60_000
        },
        { ...line, day: "2030-01-01", model: video, tasksReleased: 1, taskReleasedMicros: USD },
        {
          ...line,
          day: "2030-01-02",
          model: "rev-chat",
          chatRequests: 2,
          chatChargedMicros: 500_000,
          chatUpstreamCostMicros: 200_000,
          chatShortfallMicros: 40_000
        }
      ])
      expect(report.refunds).toEqual([])

      // Refunds are dated by the store's clock: the report of that day lists them.
      yield* refund(accountId, 300_000)
      yield* refund(accountId, 200_000)
      const refunded = (yield* allEntries(accountId)).filter((entry) => entry.kind === "refund")
      const times = refunded.map((entry) => entry.createdAt.getTime())
      const around = yield* store.revenue({ from: new Date(Math.min(...times)), to: new Date(Math.max(...times) + 1) })
      expect(around.refunds).toEqual(
        [...new Set(refunded.map((entry) => entry.createdAt.toISOString().slice(0, 10)))].sort().map((day) => ({
          day,
          refunds: refunded.filter((entry) => entry.createdAt.toISOString().startsWith(day)).length,
          refundedMicros: refunded
            .filter((entry) => entry.createdAt.toISOString().startsWith(day))
            .reduce((sum, entry) => sum + entry.amountMicros, 0)
        }))
      )
      expect(around.refunds.reduce((sum, day) => sum + day.refundedMicros, 0)).toBe(500_000)
      yield* store.settle({
        id: open.record.id,
        status: "failed",
        usage: null,
        finishReason: null,
        errorCode: "UPSTREAM_ERROR",
        chargeMicros: micros(0),
        completedAt: at(DAY + 8)
      })
    })
  )
}
