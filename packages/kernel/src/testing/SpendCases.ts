/**
 * The spend case (LedgerStore.spend) of the ChatStore conformance suite, the one with both task and
 * chat charges: one account's charge entries per UTC day and
 * model (task charges, partial ones included, chat charges settled directly or from a lease), dated
 * by the charge, within the day range, never another account's, and nothing for releases.
 */
import { Effect } from "effect"
import { expect } from "@effect/vitest"
import { ChatStore } from "../chat/ChatStore.ts"
import { LedgerStore } from "../ledger/LedgerStore.ts"
import * as Ids from "../domain/Ids.ts"
import type { AccountId } from "../domain/Ids.ts"
import { micros } from "../domain/Money.ts"
import type { Stores } from "./Case.ts"
import { at, fundedAccount, USD } from "./Fixtures.ts"
import { settledTask } from "./RevenueCases.ts"

const DAY = 86_400
const tiers = [{ upToPromptTokens: null, promptMicrosPerMillion: micros(1), completionMicrosPerMillion: micros(1) }]

/** Opens a chat request at `seconds` and settles it a second later with `charge`. */
const settledChat = (accountId: AccountId, model: string, seconds: number, charge: number) =>
  Effect.gen(function* () {
    const store = yield* ChatStore
    const opened = yield* store.open(
      {
        id: Ids.makeChatRequestId(),
        accountId,
        apiKeyId: null,
        model,
        reservedMicros: micros(USD),
        tiers,
        createdAt: at(seconds)
      },
      { requestsPerMinute: 1_000_000, maxOpenRequests: 1_000_000, keyUsageLimit: null }
    )
    if (opened._tag !== "Opened") return expect.unreachable(opened._tag)
    yield* store.settle({
      id: opened.record.id,
      status: "succeeded",
      usage: { promptTokens: 10, completionTokens: 10 },
      finishReason: "stop",
      errorCode: null,
      chargeMicros: micros(charge),
      completedAt: at(seconds + 1)
    })
  })

export const cases = (test: (title: string, body: Effect.Effect<void, unknown, Stores | ChatStore>) => void) => {
  test(
    "an account's spend sums its charges per UTC day and model, tasks and chat apart, within the day range",
    Effect.gen(function* () {
      const store = yield* ChatStore
      const ledger = yield* LedgerStore
      const accountId = yield* fundedAccount(20 * USD)
      const other = yield* fundedAccount(20 * USD, "other")
      const image = `spend-image-${Ids.makeTaskId()}`
      const video = `spend-video-${Ids.makeTaskId()}`
      const chat = `spend-chat-${Ids.makeTaskId()}`
      // Day one: a full and a partial image charge, a failed video (a release only), an image chat request.
      yield* settledTask(accountId, { model: image, priceMicros: micros(2 * USD), unitMicros: micros(2 * USD) }, 10, 2 * USD)
      yield* settledTask(accountId, { model: image, settlement: "perDeliveredUnit" }, 20, 750_000)
      yield* settledTask(accountId, { model: video }, 30, null)
      yield* settledChat(accountId, image, 40, 100_000)
      // Day two, just before midnight: a chat request charged the next day counts on the day of its charge.
      yield* settledChat(accountId, chat, 2 * DAY - 1, 300_000)
      // Day two: a request settled from a credit lease, and one of another account.
      const leaseId = `lease_spend_${Ids.makeChatRequestId()}`
      expect(
        (yield* store.lease({
          id: leaseId,
          accountId,
          needMicros: micros(USD),
          wantMicros: micros(USD),
          at: at(DAY),
          expiresAt: at(DAY + 60)
        }))._tag
      ).toBe("Leased")
      yield* store.settleLeased([
        {
          leaseId,
          id: Ids.makeChatRequestId(),
          accountId,
          apiKeyId: null,
          model: chat,
          reservedMicros: micros(USD),
          tiers,
          createdAt: at(DAY + 1),
          status: "succeeded",
          usage: { promptTokens: 10, completionTokens: 10 },
          finishReason: "stop",
          errorCode: null,
          chargeMicros: micros(200_000),
          completedAt: at(DAY + 2)
        }
      ])
      yield* store.closeLeases([leaseId], at(DAY + 3))
      yield* settledChat(other, chat, DAY + 10, 999)
      // Day four: outside the first range.
      yield* settledTask(accountId, { model: image }, 3 * DAY + 10, 500_000)

      expect(yield* ledger.spend(accountId, { from: "2030-01-01", to: "2030-01-03" })).toEqual([
        { day: "2030-01-01", model: image, taskMicros: 2 * USD + 750_000, chatMicros: 100_000 },
        { day: "2030-01-02", model: chat, taskMicros: 0, chatMicros: 200_000 },
        { day: "2030-01-03", model: chat, taskMicros: 0, chatMicros: 300_000 }
      ])
      expect(yield* ledger.spend(accountId, { from: "2030-01-03", to: "2030-01-04" })).toEqual([
        { day: "2030-01-03", model: chat, taskMicros: 0, chatMicros: 300_000 },
        { day: "2030-01-04", model: image, taskMicros: 500_000, chatMicros: 0 }
      ])
      expect(yield* ledger.spend(other, { from: "2030-01-01", to: "2030-01-04" })).toEqual([
        { day: "2030-01-02", model: chat, taskMicros: 0, chatMicros: 999 }
      ])
      expect(yield* ledger.spend(accountId, { from: "2029-12-01", to: "2029-12-31" })).toEqual([])
    })
  )
}
