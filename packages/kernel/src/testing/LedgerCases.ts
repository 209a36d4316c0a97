import { Effect } from "effect"
import { describe, expect } from "@effect/vitest"
import * as Ids from "../domain/Ids.ts"
import { LedgerStore } from "../ledger/LedgerStore.ts"
import type { Case } from "./Case.ts"
import {
  admission,
  admitted,
  allEntries,
  defined,
  expectBalances,
  fundedAccount,
  grant,
  makeAccount,
  newTask,
  refund,
  USD
} from "./Fixtures.ts"

export const ledgerCases = (test: Case) =>
  describe("LedgerStore", () => {
    test(
      "a new account holds nothing; unknown accounts are undefined",
      Effect.gen(function* () {
        const store = yield* LedgerStore
        const account = yield* makeAccount()
        yield* expectBalances(account.id, { balance: 0, reserved: 0 })
        expect(yield* store.balances(Ids.makeAccountId())).toBeUndefined()
        const unknown = { accountId: Ids.makeAccountId(), amountMicros: USD, note: null }
        expect(yield* store.grant(unknown)).toBeUndefined()
        expect(yield* store.refund(unknown)).toBeUndefined()
        expect(yield* store.adjust(unknown)).toBeUndefined()
      })
    )

    test(
      "grants, refunds and adjustments move the balance and are journaled",
      Effect.gen(function* () {
        const store = yield* LedgerStore
        const account = yield* makeAccount()
        const granted = yield* grant(account.id, 10 * USD)
        expect(granted.entry).toMatchObject({
          accountId: account.id,
          kind: "grant",
          amountMicros: 10 * USD,
          taskId: null,
          chatRequestId: null,
          note: "top-up"
        })
        expect(granted.balances.balanceMicros).toBe(10 * USD)

        const refunded = yield* refund(account.id, 3 * USD)
        expect(refunded.entry.kind).toBe("refund")
        expect(refunded.balances).toEqual({
          balanceMicros: 7 * USD,
          reservedMicros: 0,
          availableMicros: 7 * USD,
          paymentReview: false
        })

        const lowered = defined(yield* store.adjust({ accountId: account.id, amountMicros: -2 * USD, note: "correction" }))
        expect(lowered.entry).toMatchObject({ kind: "adjustment", amountMicros: -2 * USD, note: "correction" })
        const raised = defined(yield* store.adjust({ accountId: account.id, amountMicros: 500_000, note: null }))
        expect(raised.balances.balanceMicros).toBe(5_500_000)
        yield* expectBalances(account.id, { balance: 5_500_000, reserved: 0 })

        const kinds = (yield* allEntries(account.id)).map((entry) => [entry.kind, entry.amountMicros])
        expect(kinds).toEqual([
          ["adjustment", 500_000],
          ["adjustment", -2 * USD],
          ["refund", 3 * USD],
          ["grant", 10 * USD]
        ])
      })
    )

    test(
      "entry ids are time-ordered UUID v7, from grants and from admission alike",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(10 * USD)
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2)))
        yield* admitted(admission(newTask(accountId)))
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2)))
        yield* grant(accountId, USD)
        const ids = (yield* allEntries(accountId)).map((entry) => entry.id).reverse()
        expect(ids).toHaveLength(3)
        for (const id of ids) expect(id).toMatch(/^entry_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
        expect([...ids].sort()).toEqual(ids)
      })
    )

    test(
      "a change with an external reference happens once per kind",
      Effect.gen(function* () {
        const account = yield* makeAccount()
        const first = yield* grant(account.id, 4 * USD, "pay_123")
        const again = yield* grant(account.id, 4 * USD, "pay_123")
        expect(again.entry.id).toBe(first.entry.id)
        yield* expectBalances(account.id, { balance: 4 * USD, reserved: 0 })

        // A refund may carry the payment's reference: another kind, another change.
        const refunded = yield* refund(account.id, USD, "pay_123")
        expect(refunded.entry.id).not.toBe(first.entry.id)
        yield* refund(account.id, USD, "pay_123")
        yield* expectBalances(account.id, { balance: 3 * USD, reserved: 0 })

        // References are per account.
        const other = yield* makeAccount("other")
        const elsewhere = yield* grant(other.id, USD, "pay_123")
        expect(elsewhere.entry.id).not.toBe(first.entry.id)
        yield* expectBalances(other.id, { balance: USD, reserved: 0 })
        expect((yield* allEntries(account.id)).length).toBe(2)
      })
    )

    test(
      "entries come newest first, a page at a time",
      Effect.gen(function* () {
        const store = yield* LedgerStore
        const accountId = yield* fundedAccount(0)
        for (let i = 1; i <= 5; i++) yield* grant(accountId, i)

        const first = defined(yield* store.entries(accountId, { limit: 2 }))
        expect(first.entries.map((entry) => entry.amountMicros)).toEqual([5, 4])
        expect(first.nextCursor).not.toBeNull()
        const second = defined(yield* store.entries(accountId, { limit: 2, before: first.nextCursor ?? undefined }))
        expect(second.entries.map((entry) => entry.amountMicros)).toEqual([3, 2])
        const third = defined(yield* store.entries(accountId, { limit: 2, before: second.nextCursor ?? undefined }))
        expect(third.entries.map((entry) => entry.amountMicros)).toEqual([1])
        expect(third.nextCursor).toBeNull()

        // A page that ends exactly at the oldest entry says so, rather than leading to an empty page.
        const whole = defined(yield* store.entries(accountId, { limit: 5 }))
        expect(whole.entries.length).toBe(5)
        expect(whole.nextCursor).toBeNull()
      })
    )

    test(
      "a cursor from another account, or no cursor at all, finds nothing",
      Effect.gen(function* () {
        const store = yield* LedgerStore
        const mine = yield* fundedAccount(0)
        const theirs = yield* fundedAccount(0, "theirs")
        for (let i = 1; i <= 3; i++) {
          yield* grant(mine, i)
          yield* grant(theirs, i)
        }
        const theirPage = defined(yield* store.entries(theirs, { limit: 1 }))
        const theirCursor = defined(theirPage.nextCursor ?? undefined)
        expect(yield* store.entries(mine, { limit: 1, before: theirCursor })).toBeUndefined()
        expect(yield* store.entries(mine, { limit: 1, before: "not-a-cursor" })).toBeUndefined()
        expect(yield* store.entries(mine, { limit: 1, before: "" })).toBeUndefined()
      })
    )

    test(
      "audit finds nothing on a clean store",
      Effect.gen(function* () {
        expect(yield* (yield* LedgerStore).audit).toEqual([])
      })
    )
  })
