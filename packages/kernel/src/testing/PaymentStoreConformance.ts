/**
 * The conformance suite of the PaymentStore port (`suite(name, makeLayer)`), run by every store:
 * a purchase granted once however often and concurrently it arrives, events for unknown accounts
 * or payments kept and applied later, cumulative refunds in any order (also below zero, into
 * payment review), dispute holds released or turned into refunds, and the books per payment.
 * Every case ends with a clean audit.
 */
import { Effect } from "effect"
import type { Layer } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { AccountStore } from "../accounts/AccountStore.ts"
import * as Ids from "../domain/Ids.ts"
import type { AccountId } from "../domain/Ids.ts"
import type { PaymentEvent } from "../payments/PaymentEvent.ts"
import { PaymentStore } from "../payments/PaymentStore.ts"
import type { Stores } from "./Case.ts"
import { dispute, eventId, processor, purchase, receive, refunded } from "./PaymentEvents.ts"
import { allEntries, expectBalances, expectBooksBalance, makeAccount, T0, USD } from "./Fixtures.ts"

export type PaymentStores = Stores | PaymentStore

const applied = (event: PaymentEvent) =>
  Effect.map(receive(event), (kept) => {
    expect(kept.problem).toBeNull()
    expect(kept.appliedAt).not.toBeNull()
    return kept
  })

const kinds = (accountId: AccountId) =>
  Effect.map(allEntries(accountId), (entries) => entries.map((entry) => [entry.kind, entry.amountMicros]).reverse())

const paid = (paymentId: string, amount: number) =>
  Effect.gen(function* () {
    const account = yield* makeAccount()
    yield* applied(purchase(account.id, paymentId, amount))
    return account.id
  })

export const suite = (name: string, makeLayer: () => Layer.Layer<PaymentStores, unknown>): void => {
  describe(`${name} PaymentStore conformance`, () => {
    const test = (title: string, body: Effect.Effect<void, unknown, PaymentStores>) =>
      it.live(title, () => Effect.andThen(body, expectBooksBalance).pipe(Effect.provide(makeLayer())))

    test(
      "a purchase is one grant naming its payment, however often and by whichever event it arrives",
      Effect.gen(function* () {
        const store = yield* PaymentStore
        const account = yield* makeAccount()
        const event = purchase(account.id, "pay_1", 20 * USD)
        const first = yield* applied(event)
        const again = yield* applied(event)
        expect(again.appliedAt).toEqual(first.appliedAt)
        // checkout.session.completed and async_payment_succeeded: two events, one payment.
        yield* applied(purchase(account.id, "pay_1", 20 * USD))
        yield* expectBalances(account.id, { balance: 20 * USD, reserved: 0 })
        const entries = yield* allEntries(account.id)
        expect(entries.map((entry) => [entry.kind, entry.amountMicros])).toEqual([["grant", 20 * USD]])
        expect(entries[0]?.note).toContain("pay_1")
        expect(yield* store.payments(account.id)).toMatchObject([
          { processor, paymentId: "pay_1", accountId: account.id, amountMicros: 20 * USD, refundedMicros: 0, heldMicros: 0 }
        ])
        expect(yield* store.books(processor, ["pay_1", "pay_unknown"])).toEqual([
          { paymentId: "pay_1", grants: 1, grantedMicros: 20 * USD, refundedMicros: 0 }
        ])
        expect(yield* store.books("otherpay", ["pay_1"])).toEqual([])
      })
    )

    test(
      "concurrent deliveries of one purchase grant once",
      Effect.gen(function* () {
        const account = yield* makeAccount()
        const event = purchase(account.id, "pay_c", 5 * USD)
        const results = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) => receive(i % 2 === 0 ? event : { ...event, eventId: `${event.eventId}_${i}` })),
          { concurrency: "unbounded" }
        )
        expect(results.every((kept) => kept.appliedAt !== null)).toBe(true)
        expect(yield* kinds(account.id)).toEqual([["grant", 5 * USD]])
      })
    )

    test(
      "an event for an unknown account is kept unapplied, and applies once the account exists",
      Effect.gen(function* () {
        const store = yield* PaymentStore
        const accountId = Ids.makeAccountId()
        const event = purchase(accountId, "pay_u", 3 * USD)
        const kept = yield* receive(event)
        expect(kept.appliedAt).toBeNull()
        expect(kept.problem).toContain(accountId)
        expect((yield* store.events({ unappliedOnly: true, limit: 10 })).map((e) => e.event)).toEqual([event])
        yield* receive(event)
        expect((yield* store.events({ unappliedOnly: false, limit: 10 })).length).toBe(1)

        yield* AccountStore.use((accounts) => accounts.createAccount({ id: accountId, name: "late", createdAt: T0 }))
        yield* applied(event)
        expect(yield* store.events({ unappliedOnly: true, limit: 10 })).toEqual([])
        yield* expectBalances(accountId, { balance: 3 * USD, reserved: 0 })
      })
    )

    test(
      "an event with an amount the ledger cannot take is kept unapplied and moves nothing",
      Effect.gen(function* () {
        const store = yield* PaymentStore
        const account = yield* makeAccount()
        for (const event of [
          purchase(account.id, "pay_zero", 0),
          purchase(account.id, "pay_negative", -USD),
          refunded("pay_zero", -1),
          dispute("DisputeOpened", "pay_zero", "dp_zero", 0)
        ]) {
          const kept = yield* receive(event)
          expect(kept.appliedAt).toBeNull()
          expect(kept.problem).toMatch(/^invalid amount -?\d+$/)
        }
        expect(yield* allEntries(account.id)).toEqual([])
        expect(yield* store.payments(account.id)).toEqual([])
        expect((yield* store.events({ unappliedOnly: true, limit: 10 })).length).toBe(4)
      })
    )

    test(
      "a purchase that failed is kept and moves nothing",
      Effect.gen(function* () {
        const store = yield* PaymentStore
        const account = yield* makeAccount()
        const failed: PaymentEvent = {
          _tag: "PurchaseFailed",
          processor,
          eventId: eventId(),
          paymentId: "pay_f",
          accountId: account.id,
          reason: "expired"
        }
        yield* applied(failed)
        expect(yield* allEntries(account.id)).toEqual([])
        expect((yield* store.events({ unappliedOnly: false, limit: 10 })).map((e) => e.event)).toEqual([failed])
      })
    )

    test(
      "refunds follow the cumulative total in any order, below zero into payment review",
      Effect.gen(function* () {
        const store = yield* PaymentStore
        const accountId = yield* paid("pay_r", 10 * USD)
        yield* applied(refunded("pay_r", 3 * USD))
        yield* applied(refunded("pay_r", 3 * USD))
        // The full refund overtakes a partial one: the late partial adds nothing.
        yield* applied(refunded("pay_r", 10 * USD))
        yield* applied(refunded("pay_r", 6 * USD))
        expect(yield* kinds(accountId)).toEqual([
          ["grant", 10 * USD],
          ["refund", 3 * USD],
          ["refund", 7 * USD]
        ])
        expect((yield* allEntries(accountId)).every((entry) => entry.note?.includes("pay_r"))).toBe(true)
        expect(yield* store.books(processor, ["pay_r"])).toEqual([
          { paymentId: "pay_r", grants: 1, grantedMicros: 10 * USD, refundedMicros: 10 * USD }
        ])

        // Credits already spent: the refund still applies in full, and the account goes into review.
        const spender = yield* paid("pay_s", 4 * USD)
        yield* applied(dispute("DisputeOpened", "pay_s", "dp_spent", USD))
        yield* applied(refunded("pay_s", 4 * USD))
        yield* expectBalances(spender, { balance: -USD, reserved: 0, review: true })
      })
    )

    test(
      "a refund before its purchase is kept, and applies once the purchase has",
      Effect.gen(function* () {
        const store = yield* PaymentStore
        const account = yield* makeAccount()
        const early = refunded("pay_o", 2 * USD)
        const kept = yield* receive(early)
        expect(kept.problem).toContain("pay_o")
        expect((yield* store.pending(processor, "pay_o")).map((e) => e.event)).toEqual([early])
        expect(yield* store.pending(processor, "pay_other")).toEqual([])
        yield* applied(purchase(account.id, "pay_o", 5 * USD))
        yield* applied(early)
        expect(yield* store.pending(processor, "pay_o")).toEqual([])
        expect(yield* kinds(account.id)).toEqual([
          ["grant", 5 * USD],
          ["refund", 2 * USD]
        ])
      })
    )

    test(
      "concurrent refund events of one payment add up to its cumulative total",
      Effect.gen(function* () {
        const accountId = yield* paid("pay_cr", 10 * USD)
        yield* Effect.all(
          [1, 4, 2, 6, 4, 3].map((dollars) => receive(refunded("pay_cr", dollars * USD))),
          { concurrency: "unbounded" }
        )
        yield* expectBalances(accountId, { balance: 4 * USD, reserved: 0 })
      })
    )

    test(
      "an opened dispute holds its amount once; won releases it, lost releases it and refunds",
      Effect.gen(function* () {
        const store = yield* PaymentStore
        const accountId = yield* paid("pay_d", 10 * USD)
        const opened = dispute("DisputeOpened", "pay_d", "dp_1", 4 * USD)
        yield* applied(opened)
        yield* applied({ ...opened, eventId: eventId() })
        yield* expectBalances(accountId, { balance: 6 * USD, reserved: 0 })
        expect((yield* store.payments(accountId))[0]?.heldMicros).toBe(4 * USD)
        yield* applied(dispute("DisputeWon", "pay_d", "dp_1", 4 * USD))
        yield* applied(dispute("DisputeLost", "pay_d", "dp_1", 4 * USD))
        yield* expectBalances(accountId, { balance: 10 * USD, reserved: 0 })
        expect((yield* store.payments(accountId))[0]?.heldMicros).toBe(0)

        yield* applied(dispute("DisputeOpened", "pay_d", "dp_2", 10 * USD))
        yield* applied(dispute("DisputeLost", "pay_d", "dp_2", 10 * USD))
        yield* applied(dispute("DisputeWon", "pay_d", "dp_2", 10 * USD))
        expect(yield* kinds(accountId)).toEqual([
          ["grant", 10 * USD],
          ["adjustment", -4 * USD],
          ["adjustment", 4 * USD],
          ["adjustment", -10 * USD],
          ["adjustment", 10 * USD],
          ["refund", 10 * USD]
        ])
        const notes = (yield* allEntries(accountId)).map((entry) => entry.note ?? "")
        expect(notes.every((note) => note.includes("pay_d"))).toBe(true)
        yield* expectBalances(accountId, { balance: 0, reserved: 0 })
        // A lost dispute is not one of the payment's refunds.
        expect((yield* store.books(processor, ["pay_d"]))[0]?.refundedMicros).toBe(0)
      })
    )

    test(
      "a dispute closed before it was opened waits for the opening",
      Effect.gen(function* () {
        const store = yield* PaymentStore
        const accountId = yield* paid("pay_dd", 10 * USD)
        const lost = dispute("DisputeLost", "pay_dd", "dp_early", 3 * USD)
        expect((yield* receive(lost)).problem).toContain("dp_early")
        yield* applied(dispute("DisputeOpened", "pay_dd", "dp_early", 3 * USD))
        expect((yield* store.pending(processor, "pay_dd")).map((e) => e.event)).toEqual([lost])
        yield* applied(lost)
        yield* expectBalances(accountId, { balance: 7 * USD, reserved: 0 })
      })
    )
  })
}
