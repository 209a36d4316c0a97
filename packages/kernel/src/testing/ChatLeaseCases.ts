/**
 * The credit-lease cases of the ChatStore conformance suite: a lease reserves at most what is
 * available (also in parallel), grows, is charged once per settled request, releases its rest when
 * closed or swept after expiry, and a charge its closed lease cannot cover is left uncharged.
 */
import { Effect } from "effect"
import { expect } from "@effect/vitest"
import { ChatStore } from "../chat/ChatStore.ts"
import type { LeasedSettlement, LeaseRequest } from "../chat/ChatStore.ts"
import type { ChatPriceTier } from "../chat/ChatPrices.ts"
import * as Ids from "../domain/Ids.ts"
import type { AccountId } from "../domain/Ids.ts"
import { micros } from "../domain/Money.ts"
import type { Stores } from "./Case.ts"
import { allEntries, at, defined, expectBalances, fundedAccount, insertKey, T0, USD } from "./Fixtures.ts"

const tiers: ReadonlyArray<ChatPriceTier> = [
  { upToPromptTokens: null, promptMicrosPerMillion: micros(1_000_000), completionMicrosPerMillion: micros(2_000_000) }
]

let leases = 0

const leaseRequest = (accountId: AccountId, overrides: Partial<LeaseRequest> = {}): LeaseRequest => ({
  id: `lease_conformance_${++leases}_${Date.now()}`,
  accountId,
  needMicros: micros(USD),
  wantMicros: micros(4 * USD),
  at: T0,
  expiresAt: at(30),
  ...overrides
})

const settled = (leaseId: string, accountId: AccountId, overrides: Partial<LeasedSettlement> = {}): LeasedSettlement => ({
  leaseId,
  id: Ids.makeChatRequestId(),
  accountId,
  apiKeyId: null,
  model: "conformance-chat",
  reservedMicros: micros(USD),
  tiers,
  createdAt: at(1),
  status: "succeeded",
  usage: { promptTokens: 100, completionTokens: 50 },
  finishReason: "stop",
  errorCode: null,
  chargeMicros: micros(300_000),
  completedAt: at(2),
  ...overrides
})

const leaseEntries = (accountId: AccountId, leaseId: string) =>
  Effect.map(allEntries(accountId), (entries) =>
    entries
      .filter((entry) => entry.note === leaseId)
      .map((entry) => [entry.kind, entry.amountMicros])
      .reverse()
  )

export const cases = (test: (title: string, body: Effect.Effect<void, unknown, Stores | ChatStore>) => void): void => {
  test(
    "a lease reserves what it wants when available, grows, and closing releases what it did not charge",
    Effect.gen(function* () {
      const store = yield* ChatStore
      const accountId = yield* fundedAccount(10 * USD)
      const request = leaseRequest(accountId)
      expect(yield* store.lease(request)).toEqual({ _tag: "Leased", grantedMicros: 4 * USD })
      expect(yield* store.lease({ ...request, wantMicros: micros(2 * USD) })).toEqual({
        _tag: "Leased",
        grantedMicros: 2 * USD
      })
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: 6 * USD })
      const first = settled(request.id, accountId)
      yield* store.settleLeased([first, settled(request.id, accountId, { chargeMicros: micros(0), status: "failed" })])
      // A second write of the same request changes nothing.
      yield* store.settleLeased([first])
      yield* expectBalances(accountId, { balance: 10 * USD - 300_000, reserved: 6 * USD - 300_000 })
      // Asking for nothing only renews the lease: no entry.
      expect(yield* store.lease({ ...request, needMicros: micros(0), wantMicros: micros(0), expiresAt: at(60) })).toEqual({
        _tag: "Leased",
        grantedMicros: 0
      })
      expect(yield* store.get(accountId, first.id)).toMatchObject({
        status: "succeeded",
        reservedMicros: USD,
        chargedMicros: 300_000,
        usage: { promptTokens: 100, completionTokens: 50 },
        completedAt: at(2)
      })
      const charges = (yield* allEntries(accountId)).filter((entry) => entry.chatRequestId === first.id)
      expect(charges.map((entry) => [entry.kind, entry.amountMicros])).toEqual([["charge", 300_000]])
      expect(yield* store.closeLeases([request.id], at(3))).toBe(1)
      expect(yield* store.closeLeases([request.id], at(4))).toBe(0)
      yield* expectBalances(accountId, { balance: 10 * USD - 300_000, reserved: 0 })
      expect(yield* leaseEntries(accountId, request.id)).toEqual([
        ["reserve", 4 * USD],
        ["reserve", 2 * USD],
        ["release", 6 * USD - 300_000]
      ])
      expect(yield* store.lease(request)).toEqual({ _tag: "LeaseClosed" })
    })
  )

  test(
    "a lease takes what is left when it is less than wanted but at least needed, else nothing",
    Effect.gen(function* () {
      const store = yield* ChatStore
      const accountId = yield* fundedAccount(3 * USD)
      expect(yield* store.lease(leaseRequest(accountId))).toEqual({ _tag: "Leased", grantedMicros: 3 * USD })
      const refused = leaseRequest(accountId, { needMicros: micros(1) })
      expect(yield* store.lease(refused)).toEqual({ _tag: "InsufficientCredits", availableMicros: 0 })
      expect(yield* store.renewLeases([refused.id], at(60))).toEqual([])
      yield* expectBalances(accountId, { balance: 3 * USD, reserved: 3 * USD })
    })
  )

  test(
    "parallel leases never reserve more than the account holds",
    Effect.gen(function* () {
      const store = yield* ChatStore
      const accountId = yield* fundedAccount(7 * USD)
      const results = yield* Effect.all(
        Array.from({ length: 10 }, () =>
          store.lease(leaseRequest(accountId, { needMicros: micros(2 * USD), wantMicros: micros(2 * USD) }))
        ),
        { concurrency: "unbounded" }
      )
      expect(results.filter((result) => result._tag === "Leased")).toHaveLength(3)
      expect(results.filter((result) => result._tag === "InsufficientCredits")).toHaveLength(7)
      yield* expectBalances(accountId, { balance: 7 * USD, reserved: 6 * USD })
    })
  )

  test(
    "the sweep closes only expired leases; renewing moves the expiry; a closed lease charges nothing",
    Effect.gen(function* () {
      const store = yield* ChatStore
      const accountId = yield* fundedAccount(10 * USD)
      const keyId = (yield* insertKey(accountId)).id
      const renewed = leaseRequest(accountId)
      const expired = leaseRequest(accountId)
      yield* store.lease(renewed)
      yield* store.lease(expired)
      expect(yield* store.renewLeases([renewed.id], at(90))).toEqual([renewed.id])
      expect(yield* store.sweepLeases(at(60))).toBe(1)
      expect(yield* store.sweepLeases(at(61))).toBe(0)
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: 4 * USD })
      const late = settled(expired.id, accountId, { apiKeyId: keyId })
      yield* store.settleLeased([late, settled(renewed.id, accountId)])
      expect(defined(yield* store.get(accountId, late.id)).chargedMicros).toBe(0)
      yield* expectBalances(accountId, { balance: 10 * USD - 300_000, reserved: 4 * USD - 300_000 })
      expect(yield* store.sweepLeases(at(100))).toBe(1)
      yield* expectBalances(accountId, { balance: 10 * USD - 300_000, reserved: 0 })
    })
  )
}
