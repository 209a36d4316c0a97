/**
 * The conformance suite of payment webhooks (`suite(name, makeLayer)`), run by every store: a
 * payment event that changes the account's credits raises, in the write that applies it, one
 * delivery per enabled endpoint of the account subscribing to its type, carrying the payment after
 * the event (PaymentWebhook.PaymentData) with the dispute it concerns and the ledger entries it
 * made; an event again, one that changes nothing or one not applied yet raises none; payment
 * deliveries are in their endpoint's log and in no task's.
 */
import { Effect } from "effect"
import type { Layer } from "effect"
import { describe, expect, it } from "@effect/vitest"
import type { AccountId } from "../domain/Ids.ts"
import { PaymentStore } from "../payments/PaymentStore.ts"
import * as PaymentWebhook from "../payments/PaymentWebhook.ts"
import type { EventType } from "../webhooks/WebhookEvent.ts"
import { WebhookStore } from "../webhooks/WebhookStore.ts"
import type { DeliveryClaim } from "../webhooks/WebhookStore.ts"
import type { Stores } from "./Case.ts"
import { dispute, processor, purchase, receive, refunded } from "./PaymentEvents.ts"
import { admission, admitted, allEntries, at, expectBooksBalance, makeAccount, newTask, T0, USD } from "./Fixtures.ts"

export type PaymentWebhookStores = Stores | PaymentStore | WebhookStore

const paymentEvents: ReadonlyArray<EventType> = [
  "payment.succeeded",
  "payment.refunded",
  "payment.disputed",
  "payment.dispute_closed"
]

let endpoints = 0
const endpoint = (accountId: AccountId, events: ReadonlyArray<EventType>) =>
  WebhookStore.use((store) => {
    const n = ++endpoints
    return store.createEndpoint({
      id: `whep_payhook_${n}`,
      accountId,
      url: `https://hooks.example.com/pay/${n}`,
      events,
      secret: `whsec_pay${n}`,
      now: T0
    })
  })

/** Claims everything due, far ahead; delivers it so that the next claim sees only what is new. */
const drain = Effect.gen(function* () {
  const store = yield* WebhookStore
  const claims = yield* store.claim({ limit: 100, leaseMs: 30_000, now: at(3600) })
  yield* store.recordRound(
    claims.map((c) => ({ deliveryId: c.delivery.id, leaseToken: c.leaseToken, outcome: { _tag: "Delivered" as const } })),
    at(3600)
  )
  return claims
})

/** The ids of the account's ledger entries newer than the `seen` first ones (oldest first). */
const newEntryIds = (accountId: AccountId, seen: number) =>
  Effect.map(allEntries(accountId), (entries) =>
    entries
      .map((entry) => entry.id)
      .reverse()
      .slice(seen)
  )

const onlyPayment = (claims: ReadonlyArray<DeliveryClaim>): PaymentWebhook.PaymentData => {
  expect(claims).toHaveLength(1)
  expect(claims[0]!.task).toBeNull()
  return claims[0]!.payment!
}

export const suite = (name: string, makeLayer: () => Layer.Layer<PaymentWebhookStores, unknown>): void => {
  describe(`${name} payment webhook conformance`, () => {
    const test = (title: string, body: Effect.Effect<void, unknown, PaymentWebhookStores>) =>
      it.live(title, () => Effect.andThen(body, expectBooksBalance).pipe(Effect.provide(makeLayer())))

    test(
      "each credit change of a payment raises one delivery per subscribing endpoint, with the payment after it",
      Effect.gen(function* () {
        const account = (yield* makeAccount()).id
        const all = yield* endpoint(account, paymentEvents)
        const purchases = yield* endpoint(account, ["payment.succeeded"])
        yield* endpoint(account, ["task.succeeded"])
        const paused = yield* endpoint(account, paymentEvents)
        yield* WebhookStore.use((store) => store.updateEndpoint(account, paused.id, { enabled: false, now: T0 }))
        const other = (yield* makeAccount("other")).id
        yield* endpoint(other, paymentEvents)

        const bought = purchase(account, "pay_hook_1", 20 * USD)
        yield* receive(bought)
        const granted = yield* drain
        expect(granted.map((c) => [c.delivery.endpointId, c.delivery.type]).sort()).toEqual(
          [
            [all.id, "payment.succeeded"],
            [purchases.id, "payment.succeeded"]
          ].sort()
        )
        for (const c of granted) {
          expect(c.delivery).toMatchObject({ accountId: account, taskId: null, paymentId: "pay_hook_1", status: "pending" })
          expect(c.task).toBeNull()
          expect(c.secrets.length).toBe(1)
          expect(c.payment).toEqual({
            id: "pay_hook_1",
            processor,
            amountMicros: 20 * USD,
            refundedMicros: 0,
            heldMicros: 0,
            createdAt: c.delivery.occurredAt,
            dispute: null,
            ledgerEntryIds: yield* newEntryIds(account, 0)
          })
          expect(PaymentWebhook.statusOf(c.payment!)).toBe("succeeded")
        }

        // The same event again, and another event for the same purchase: nothing changes, nothing is raised.
        yield* receive(bought)
        yield* receive(purchase(account, "pay_hook_1", 20 * USD))
        expect(yield* drain).toEqual([])

        yield* receive(refunded("pay_hook_1", 5 * USD))
        const refund = onlyPayment(yield* drain)
        expect(refund).toMatchObject({ refundedMicros: 5 * USD, heldMicros: 0, dispute: null })
        expect(refund.ledgerEntryIds).toEqual(yield* newEntryIds(account, 1))
        expect(PaymentWebhook.statusOf(refund)).toBe("partially_refunded")
        yield* receive(refunded("pay_hook_1", 4 * USD))
        expect(yield* drain).toEqual([])

        yield* receive(dispute("DisputeOpened", "pay_hook_1", "dp_hook_1", 3 * USD))
        const opened = yield* drain
        expect(opened[0]?.delivery.type).toBe("payment.disputed")
        const held = onlyPayment(opened)
        expect(held).toMatchObject({ heldMicros: 3 * USD, dispute: { id: "dp_hook_1", amountMicros: 3 * USD, status: "open" } })
        expect(held.ledgerEntryIds).toEqual(yield* newEntryIds(account, 2))
        expect(PaymentWebhook.statusOf(held)).toBe("disputed")

        yield* receive(dispute("DisputeLost", "pay_hook_1", "dp_hook_1", 3 * USD))
        const closed = yield* drain
        expect(closed[0]?.delivery.type).toBe("payment.dispute_closed")
        const lost = onlyPayment(closed)
        expect(lost).toMatchObject({
          refundedMicros: 5 * USD,
          heldMicros: 0,
          dispute: { id: "dp_hook_1", amountMicros: 3 * USD, status: "lost" }
        })
        expect(lost.ledgerEntryIds).toHaveLength(2)
        expect(lost.ledgerEntryIds).toEqual(yield* newEntryIds(account, 3))
        yield* receive(dispute("DisputeWon", "pay_hook_1", "dp_hook_1", 3 * USD))
        expect(yield* drain).toEqual([])

        // In the endpoint's log; in no task's.
        const log = yield* WebhookStore.use((store) => store.listDeliveries(account, all.id, 10))
        expect(log?.map((d) => d.type)).toEqual([
          "payment.dispute_closed",
          "payment.disputed",
          "payment.refunded",
          "payment.succeeded"
        ])
        const task = yield* admitted(admission(newTask(account)))
        expect(yield* WebhookStore.use((store) => store.listTaskDeliveries(account, task.id, 10))).toEqual([])
      })
    )

    test(
      "an event waiting for its payment raises nothing until it applies; a dispute won releases the hold",
      Effect.gen(function* () {
        const account = (yield* makeAccount()).id
        yield* endpoint(account, paymentEvents)
        const early = yield* receive(refunded("pay_hook_2", 2 * USD))
        expect(early.appliedAt).toBeNull()
        expect(yield* drain).toEqual([])
        yield* receive(purchase(account, "pay_hook_2", 10 * USD))
        expect((yield* drain).map((c) => c.delivery.type)).toEqual(["payment.succeeded"])
        const again = yield* receive(early.event)
        expect(again.appliedAt).not.toBeNull()
        const refund = onlyPayment(yield* drain)
        expect(refund.refundedMicros).toBe(2 * USD)

        yield* receive(dispute("DisputeOpened", "pay_hook_2", "dp_hook_2", 8 * USD))
        yield* drain
        yield* receive(dispute("DisputeWon", "pay_hook_2", "dp_hook_2", 8 * USD))
        const won = onlyPayment(yield* drain)
        expect(won).toMatchObject({ heldMicros: 0, dispute: { id: "dp_hook_2", status: "won" } })
        expect(won.ledgerEntryIds).toHaveLength(1)
        expect(PaymentWebhook.statusOf(won)).toBe("partially_refunded")
      })
    )

    test(
      "a purchase for an account without payment endpoints raises nothing",
      Effect.gen(function* () {
        const account = (yield* makeAccount()).id
        yield* endpoint(account, ["task.succeeded", "task.running"])
        const kept = yield* receive(purchase(account, "pay_hook_3", 10 * USD))
        expect(kept.appliedAt).not.toBeNull()
        expect(yield* drain).toEqual([])
      })
    )
  })
}
