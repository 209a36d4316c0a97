/**
 * The conformance suite of the ChatStore port (`suite(name, makeLayer)`), run by every store beside
 * StoreConformance: opening with its limits and reservation, settling once (also concurrently),
 * scoping and paging of reads, the sweep of stale requests, and parallel opens that never reserve
 * more than an account holds; the upstream, its cost and the shortfall in the margin report; the credit-lease cases (ChatLeaseCases); the revenue report (RevenueCases); an account's spend by day and model (LedgerStore.spend, SpendCases). Every case ends with a clean audit.
 */
import { Effect } from "effect"
import type { Layer } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { AccountStore } from "../accounts/AccountStore.ts"
import { ChatStore } from "../chat/ChatStore.ts"
import type { ChatLimits, ChatSettlement, NewChatRequest, OpenResult } from "../chat/ChatStore.ts"
import type { ChatPriceTier } from "../chat/ChatPrices.ts"
import * as Ids from "../domain/Ids.ts"
import type { AccountId, ChatRequestId } from "../domain/Ids.ts"
import { micros } from "../domain/Money.ts"
import type { Stores } from "./Case.ts"
import * as ChatLeaseCases from "./ChatLeaseCases.ts"
import * as RevenueCases from "./RevenueCases.ts"
import * as SpendCases from "./SpendCases.ts"
import {
  allEntries,
  at,
  defined,
  expectBalances,
  expectBooksBalance,
  fundedAccount,
  grant,
  makeKey,
  refund,
  T0,
  USD
} from "./Fixtures.ts"

export type ChatStores = Stores | ChatStore

const tiers: ReadonlyArray<ChatPriceTier> = [
  { upToPromptTokens: 1000, promptMicrosPerMillion: micros(1_000_000), completionMicrosPerMillion: micros(2_000_000) },
  { upToPromptTokens: null, promptMicrosPerMillion: micros(2_000_000), completionMicrosPerMillion: micros(4_000_000) }
]

const openLimits: ChatLimits = { requestsPerMinute: 1_000_000, maxOpenRequests: 1_000_000, keyUsageLimit: null }

const newRequest = (accountId: AccountId, overrides: Partial<NewChatRequest> = {}): NewChatRequest => ({
  id: Ids.makeChatRequestId(),
  accountId,
  apiKeyId: null,
  model: "conformance-chat",
  reservedMicros: micros(USD),
  tiers,
  createdAt: T0,
  ...overrides
})

const open = (request: NewChatRequest, limits: ChatLimits = openLimits) => ChatStore.use((store) => store.open(request, limits))

const opened = (request: NewChatRequest, limits: ChatLimits = openLimits) =>
  Effect.map(open(request, limits), (result) => {
    expect(result._tag).toBe("Opened")
    return (result as Extract<OpenResult, { _tag: "Opened" }>).record
  })

const settlement = (id: ChatRequestId, overrides: Partial<ChatSettlement> = {}): ChatSettlement => ({
  id,
  status: "succeeded",
  usage: { promptTokens: 100, completionTokens: 50 },
  finishReason: "stop",
  errorCode: null,
  chargeMicros: micros(300_000),
  completedAt: at(5),
  ...overrides
})

const settle = (s: ChatSettlement) => ChatStore.use((store) => store.settle(s))

const entriesOf = (accountId: AccountId, id: ChatRequestId) =>
  Effect.map(allEntries(accountId), (entries) =>
    entries
      .filter((entry) => entry.chatRequestId === id)
      .map((entry) => [entry.kind, entry.amountMicros])
      .reverse()
  )

export const suite = <R = never>(name: string, makeLayer: () => Layer.Layer<ChatStores | R, unknown>): void => {
  describe(`${name} chat store conformance`, () => {
    const test = (title: string, body: Effect.Effect<void, unknown, ChatStores>) =>
      it.live(title, () => Effect.andThen(body, expectBooksBalance).pipe(Effect.provide(makeLayer())))

    ChatLeaseCases.cases(test)
    RevenueCases.cases(test)
    SpendCases.cases(test)

    test(
      "the upstream and its cost are recorded on both paths, and the margin report groups them by model and upstream",
      Effect.gen(function* () {
        const store = yield* ChatStore
        const accountId = yield* fundedAccount(10 * USD)
        const model = `margin-${Ids.makeChatRequestId()}`
        const exact = yield* opened(newRequest(accountId, { model, createdAt: at(1) }))
        yield* settle(settlement(exact.id, { upstream: "backup", upstreamCostMicros: micros(120_000) }))
        // A second settle changes nothing, its upstream neither.
        yield* settle(settlement(exact.id, { upstream: "primary", upstreamCostMicros: micros(999) }))
        const local = yield* opened(newRequest(accountId, { model, createdAt: at(2) }))
        yield* settle(settlement(local.id, { chargeMicros: micros(100_000) }))
        const still = yield* opened(newRequest(accountId, { model, createdAt: at(3) }))
        const leaseId = `lease_margin_${exact.id}`
        yield* store.lease({
          id: leaseId,
          accountId,
          needMicros: micros(USD),
          wantMicros: micros(2 * USD),
          at: T0,
          expiresAt: at(60)
        })
        const leased = (upstream: string, cost: number | null) => ({
          leaseId,
          id: Ids.makeChatRequestId(),
          accountId,
          apiKeyId: null,
          model,
          reservedMicros: micros(USD),
          tiers,
          createdAt: at(4),
          status: "succeeded" as const,
          usage: { promptTokens: 100, completionTokens: 50 },
          finishReason: "stop",
          errorCode: null,
          chargeMicros: micros(200_000),
          completedAt: at(5),
          upstream,
          upstreamCostMicros: cost === null ? null : micros(cost)
        })
        yield* store.settleLeased([leased("backup", 80_000), leased("primary", null), leased("primary", 50_000)])
        // Out of the range: a request created at its end.
        const late = yield* opened(newRequest(accountId, { model, createdAt: at(10) }))
        yield* settle(settlement(late.id, { upstream: "backup", upstreamCostMicros: micros(1) }))

        const rows = (yield* store.margin({ from: T0, to: at(10) })).filter((row) => row.model === model)
        expect(rows).toEqual([
          { model, upstream: null, requests: 1, chargedMicros: 100_000, upstreamCostMicros: 0, shortfallMicros: 0 },
          { model, upstream: "backup", requests: 2, chargedMicros: 500_000, upstreamCostMicros: 200_000, shortfallMicros: 0 },
          { model, upstream: "primary", requests: 2, chargedMicros: 400_000, upstreamCostMicros: 50_000, shortfallMicros: 0 }
        ])
        yield* settle(settlement(still.id, { status: "failed", usage: null, chargeMicros: micros(0) }))
        yield* store.closeLeases([leaseId], at(6))
      })
    )

    test(
      "the shortfall is recorded per request on both paths, once, and the margin report sums it",
      Effect.gen(function* () {
        const store = yield* ChatStore
        const accountId = yield* fundedAccount(10 * USD)
        const model = `shortfall-${Ids.makeChatRequestId()}`
        const exact = yield* opened(newRequest(accountId, { model, createdAt: at(1) }))
        yield* settle(settlement(exact.id, { chargeMicros: micros(USD), shortfallMicros: micros(40_000) }))
        // A second settle changes nothing, its shortfall neither.
        yield* settle(settlement(exact.id, { chargeMicros: micros(USD), shortfallMicros: micros(999) }))
        const fits = yield* opened(newRequest(accountId, { model, createdAt: at(1) }))
        yield* settle(settlement(fits.id, { chargeMicros: micros(300_000) }))
        const leaseId = `lease_shortfall_${exact.id}`
        yield* store.lease({
          id: leaseId,
          accountId,
          needMicros: micros(USD),
          wantMicros: micros(3 * USD),
          at: T0,
          expiresAt: at(60)
        })
        const leased = (shortfall: number) => ({
          leaseId,
          id: Ids.makeChatRequestId(),
          accountId,
          apiKeyId: null,
          model,
          reservedMicros: micros(USD),
          tiers,
          createdAt: at(2),
          status: "succeeded" as const,
          usage: { promptTokens: 100, completionTokens: 50 },
          finishReason: "stop",
          errorCode: null,
          chargeMicros: micros(USD),
          completedAt: at(3),
          shortfallMicros: micros(shortfall)
        })
        const first = leased(2_500)
        yield* store.settleLeased([first, leased(500)])
        // A batch sent again (a retried flush) records nothing twice.
        yield* store.settleLeased([first])
        yield* store.closeLeases([leaseId], at(4))

        const rows = (yield* store.margin({ from: T0, to: at(10) })).filter((row) => row.model === model)
        expect(rows).toEqual([
          {
            model,
            upstream: null,
            requests: 4,
            chargedMicros: 3 * USD + 300_000,
            upstreamCostMicros: 0,
            shortfallMicros: 43_000
          }
        ])
        yield* expectBalances(accountId, { balance: 10 * USD - 3 * USD - 300_000, reserved: 0 })
      })
    )

    test(
      "open reserves and records an open request",
      Effect.gen(function* () {
        const store = yield* ChatStore
        const accountId = yield* fundedAccount(5 * USD)
        const request = newRequest(accountId, { reservedMicros: micros(2 * USD) })
        const record = yield* opened(request)
        expect(record).toEqual({
          id: request.id,
          model: "conformance-chat",
          status: "open",
          reservedMicros: 2 * USD,
          chargedMicros: null,
          usage: null,
          finishReason: null,
          errorCode: null,
          createdAt: T0,
          completedAt: null
        })
        expect(yield* store.get(accountId, request.id)).toEqual(record)
        expect(yield* store.find(request.id)).toEqual({ record, accountId, tiers })
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: 2 * USD })
        expect(yield* entriesOf(accountId, request.id)).toEqual([["reserve", 2 * USD]])
      })
    )

    test(
      "a request that does not fit is refused and writes nothing",
      Effect.gen(function* () {
        const store = yield* ChatStore
        const accountId = yield* fundedAccount(USD)
        yield* opened(newRequest(accountId, { reservedMicros: micros(600_000) }))
        const request = newRequest(accountId, { reservedMicros: micros(500_000) })
        const before = yield* allEntries(accountId)
        expect(yield* open(request)).toEqual({ _tag: "InsufficientCredits", availableMicros: 400_000 })
        expect(yield* store.get(accountId, request.id)).toBeUndefined()
        expect(yield* store.find(request.id)).toBeUndefined()
        expect(yield* allEntries(accountId)).toEqual(before)
        yield* expectBalances(accountId, { balance: USD, reserved: 600_000 })
      })
    )

    test(
      "payment review refuses until a grant covers it",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(2 * USD)
        yield* opened(newRequest(accountId, { reservedMicros: micros(USD) }))
        yield* refund(accountId, 2 * USD)
        expect(yield* open(newRequest(accountId, { reservedMicros: micros(1) }))).toEqual({ _tag: "PaymentReviewRequired" })
        yield* grant(accountId, 5 * USD)
        yield* opened(newRequest(accountId, { reservedMicros: micros(1) }))
      })
    )

    test(
      "requests per minute are limited per account, in a fixed window",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(10 * USD)
        const other = yield* fundedAccount(10 * USD, "other")
        const limits = { ...openLimits, requestsPerMinute: 2 }
        const send = (account: AccountId, seconds: number) => open(newRequest(account, { createdAt: at(seconds) }), limits)
        expect((yield* send(accountId, 0))._tag).toBe("Opened")
        expect((yield* send(accountId, 10))._tag).toBe("Opened")
        expect(yield* send(accountId, 20)).toEqual({ _tag: "RateLimited", retryAfterSeconds: 40 })
        expect((yield* send(other, 20))._tag).toBe("Opened")
        yield* expectBalances(accountId, { balance: 10 * USD, reserved: 2 * USD })
        expect((yield* send(accountId, 61))._tag).toBe("Opened")
      })
    )

    test(
      "open requests are limited per account, and settling frees a place",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(10 * USD)
        const limits = { ...openLimits, maxOpenRequests: 1 }
        const first = yield* opened(newRequest(accountId), limits)
        expect(yield* open(newRequest(accountId, { createdAt: at(1) }), limits)).toEqual({ _tag: "ConcurrencyLimited" })
        yield* settle(settlement(first.id))
        yield* opened(newRequest(accountId, { createdAt: at(6) }), limits)
      })
    )

    test(
      "each request counts one use of the key's usage limit",
      Effect.gen(function* () {
        const accounts = yield* AccountStore
        const accountId = yield* fundedAccount(10 * USD)
        const key = makeKey(accountId, { usageLimit: 2 })
        yield* accounts.insertApiKey(key)
        const limits = { ...openLimits, keyUsageLimit: 2 }
        yield* opened(newRequest(accountId, { apiKeyId: key.id }), limits)
        yield* opened(newRequest(accountId, { apiKeyId: key.id }), limits)
        expect(yield* open(newRequest(accountId, { apiKeyId: key.id }), limits)).toEqual({ _tag: "KeyUsageExceeded" })
        expect((yield* accounts.listApiKeys(accountId))[0]?.usageCount).toBe(2)
        yield* expectBalances(accountId, { balance: 10 * USD, reserved: 2 * USD })
      })
    )

    test(
      "settle charges, releases the rest and records the outcome, once",
      Effect.gen(function* () {
        const store = yield* ChatStore
        const accountId = yield* fundedAccount(5 * USD)
        const record = yield* opened(newRequest(accountId))
        const settled = defined(yield* settle(settlement(record.id)))
        expect(settled).toEqual({
          ...record,
          status: "succeeded",
          chargedMicros: 300_000,
          usage: { promptTokens: 100, completionTokens: 50 },
          finishReason: "stop",
          errorCode: null,
          completedAt: at(5)
        })
        expect(yield* store.get(accountId, record.id)).toEqual(settled)
        yield* expectBalances(accountId, { balance: 5 * USD - 300_000, reserved: 0 })
        expect(yield* entriesOf(accountId, record.id)).toEqual([
          ["reserve", USD],
          ["charge", 300_000],
          ["release", 700_000]
        ])

        const again = yield* settle(settlement(record.id, { status: "failed", chargeMicros: micros(0), completedAt: at(9) }))
        expect(again).toEqual(settled)
        expect(yield* entriesOf(accountId, record.id)).toHaveLength(3)
      })
    )

    test(
      "a charge of the whole reservation releases nothing; a zero charge releases it all",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(5 * USD)
        const whole = yield* opened(newRequest(accountId))
        const none = yield* opened(newRequest(accountId))
        yield* settle(settlement(whole.id, { chargeMicros: micros(USD) }))
        yield* settle(
          settlement(none.id, { status: "failed", usage: null, chargeMicros: micros(0), errorCode: "UPSTREAM_ERROR" })
        )
        expect(yield* entriesOf(accountId, whole.id)).toEqual([
          ["reserve", USD],
          ["charge", USD]
        ])
        expect(yield* entriesOf(accountId, none.id)).toEqual([
          ["reserve", USD],
          ["release", USD]
        ])
        expect((yield* (yield* ChatStore).get(accountId, none.id))?.errorCode).toBe("UPSTREAM_ERROR")
        yield* expectBalances(accountId, { balance: 4 * USD, reserved: 0 })
      })
    )

    test(
      "of concurrent settles exactly one writes",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(5 * USD)
        const record = yield* opened(newRequest(accountId))
        const results = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) => settle(settlement(record.id, { chargeMicros: micros(100_000 * (i + 1)) }))),
          { concurrency: "unbounded" }
        )
        const charged = new Set(results.map((result) => result?.chargedMicros))
        expect(charged.size).toBe(1)
        const entries = yield* entriesOf(accountId, record.id)
        expect(entries.filter(([kind]) => kind === "charge")).toHaveLength(1)
        expect(entries.filter(([kind]) => kind === "release")).toHaveLength(1)
        yield* expectBalances(accountId, { balance: 5 * USD - [...charged][0]!, reserved: 0 })
      })
    )

    test(
      "settling an unknown request changes nothing",
      Effect.gen(function* () {
        expect(yield* settle(settlement(Ids.makeChatRequestId()))).toBeUndefined()
      })
    )

    test(
      "parallel opens never reserve more than the account holds",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(3 * USD + 500_000)
        const results = yield* Effect.all(
          Array.from({ length: 10 }, () => open(newRequest(accountId))),
          { concurrency: "unbounded" }
        )
        expect(results.filter((result) => result._tag === "Opened")).toHaveLength(3)
        expect(results.filter((result) => result._tag === "InsufficientCredits")).toHaveLength(7)
        yield* expectBalances(accountId, { balance: 3 * USD + 500_000, reserved: 3 * USD })
      })
    )

    test(
      "reads are scoped to the account",
      Effect.gen(function* () {
        const store = yield* ChatStore
        const owner = yield* fundedAccount(5 * USD)
        const stranger = yield* fundedAccount(5 * USD, "stranger")
        const record = yield* opened(newRequest(owner))
        yield* opened(newRequest(owner, { createdAt: at(1) }))
        expect(yield* store.get(stranger, record.id)).toBeUndefined()
        expect(yield* store.list(stranger, { limit: 10, before: record.id })).toBeUndefined()
        expect(yield* store.list(stranger, { limit: 10 })).toEqual({ requests: [], nextCursor: null })
        expect(yield* store.list(owner, { limit: 10, before: Ids.makeChatRequestId() })).toBeUndefined()
      })
    )

    test(
      "list pages newest first with a cursor",
      Effect.gen(function* () {
        const store = yield* ChatStore
        const accountId = yield* fundedAccount(10 * USD)
        const ids: Array<ChatRequestId> = []
        for (let i = 0; i < 5; i++) ids.push((yield* opened(newRequest(accountId, { createdAt: at(i) }))).id)
        // Two at the same instant keep their insertion order.
        ids.push((yield* opened(newRequest(accountId, { createdAt: at(4) }))).id)
        const pages: Array<ReadonlyArray<string>> = []
        let before: ChatRequestId | undefined
        for (;;) {
          const page = defined(yield* store.list(accountId, { limit: 2, before }))
          pages.push(page.requests.map((request) => request.id))
          if (page.nextCursor === null) break
          before = page.nextCursor as ChatRequestId
        }
        expect(pages).toEqual([
          [ids[5], ids[4]],
          [ids[3], ids[2]],
          [ids[1], ids[0]]
        ])
        const all = defined(yield* store.list(accountId, { limit: 100 }))
        expect(all.nextCursor).toBeNull()
        expect(all.requests.map((request) => request.id)).toEqual([...ids].reverse())
      })
    )

    test(
      "sweepStale settles old open requests as abandoned, charging nothing",
      Effect.gen(function* () {
        const store = yield* ChatStore
        const accountId = yield* fundedAccount(10 * USD)
        const old = yield* opened(newRequest(accountId, { createdAt: at(0) }))
        const oldSettled = yield* opened(newRequest(accountId, { createdAt: at(1) }))
        const recent = yield* opened(newRequest(accountId, { createdAt: at(100) }))
        yield* settle(settlement(oldSettled.id))
        expect(yield* store.sweepStale(at(50), at(200))).toBe(1)
        expect(yield* store.get(accountId, old.id)).toMatchObject({
          status: "failed",
          chargedMicros: 0,
          errorCode: "ABANDONED",
          completedAt: at(200)
        })
        expect((yield* store.get(accountId, recent.id))?.status).toBe("open")
        expect((yield* store.get(accountId, oldSettled.id))?.status).toBe("succeeded")
        expect(yield* entriesOf(accountId, old.id)).toEqual([
          ["reserve", USD],
          ["release", USD]
        ])
        yield* expectBalances(accountId, { balance: 10 * USD - 300_000, reserved: USD })
        expect(yield* store.sweepStale(at(50), at(300))).toBe(0)
      })
    )
  })
}
