import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { MemoryStore } from "@taskmeter/storage-memory"
import { AccountNotFound } from "../../src/accounts/Accounts.ts"
import { AccountStore } from "../../src/accounts/AccountStore.ts"
import * as Errors from "../../src/domain/Errors.ts"
import * as Ids from "../../src/domain/Ids.ts"
import * as Ledger from "../../src/ledger/Ledger.ts"
import { micros } from "../../src/domain/Money.ts"

const layer = Ledger.layer.pipe(Layer.provideMerge(MemoryStore.layer))

const account = (name: string) =>
  Effect.map(
    AccountStore.use((store) => store.createAccount({ id: Ids.makeAccountId(), name, createdAt: new Date(0) })),
    (created) => created.id
  )

describe("Ledger", () => {
  it.effect("moves credits and reports them", () =>
    Effect.gen(function* () {
      const ledger = yield* Ledger.Ledger
      const id = yield* account("acme")
      yield* ledger.grant(id, micros(3_000_000), { note: "top-up", externalRef: "pay_1" })
      yield* ledger.grant(id, micros(3_000_000), { note: "top-up", externalRef: "pay_1" })
      yield* ledger.refund(id, micros(500_000))
      const adjusted = yield* ledger.adjust(id, -250_000, { note: "goodwill reversal" })
      expect(adjusted.balances).toEqual({
        balanceMicros: 2_250_000,
        reservedMicros: 0,
        availableMicros: 2_250_000,
        paymentReview: false
      })
      expect(yield* ledger.balances(id)).toEqual(adjusted.balances)
      expect(yield* ledger.audit).toEqual([])
    }).pipe(Effect.provide(layer))
  )

  it.effect("an unknown account is AccountNotFound", () =>
    Effect.gen(function* () {
      const ledger = yield* Ledger.Ledger
      const missing = Ids.makeAccountId()
      const notFound = new AccountNotFound({ accountId: missing })
      expect(yield* Effect.flip(ledger.grant(missing, micros(1)))).toEqual(notFound)
      expect(yield* Effect.flip(ledger.balances(missing))).toEqual(notFound)
      expect(yield* Effect.flip(ledger.usage(missing, { limit: 10 }))).toEqual(notFound)
    }).pipe(Effect.provide(layer))
  )

  it.effect("usage pages through the entries newest first, at most 100 a page", () =>
    Effect.gen(function* () {
      const ledger = yield* Ledger.Ledger
      const id = yield* account("acme")
      for (let i = 1; i <= 102; i++) yield* ledger.grant(id, micros(i))
      const first = yield* ledger.usage(id, { limit: 1000 })
      expect(first.entries.length).toBe(100)
      expect(first.entries[0]?.amountMicros).toBe(102)
      expect(first.balances.balanceMicros).toBe((102 * 103) / 2)
      const second = yield* ledger.usage(id, { limit: 100, before: first.nextCursor ?? undefined })
      expect(second.entries.map((entry) => entry.amountMicros)).toEqual([2, 1])
      expect(second.nextCursor).toBeNull()
      expect((yield* ledger.usage(id, { limit: 0 })).entries.length).toBe(1)
    }).pipe(Effect.provide(layer))
  )

  it.effect("a cursor of another account is REQUEST_NOT_FOUND", () =>
    Effect.gen(function* () {
      const ledger = yield* Ledger.Ledger
      const mine = yield* account("mine")
      const theirs = yield* account("theirs")
      yield* ledger.grant(theirs, micros(1))
      yield* ledger.grant(theirs, micros(2))
      const cursor = (yield* ledger.usage(theirs, { limit: 1 })).nextCursor ?? undefined
      expect(cursor).toBeDefined()
      const error = yield* Effect.flip(ledger.usage(mine, { limit: 1, before: cursor }))
      expect(error).toBeInstanceOf(Errors.RequestNotFound)
    }).pipe(Effect.provide(layer))
  )
})
