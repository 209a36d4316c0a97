import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { AccountStore, Ids, Ledger, Payments } from "@taskmeter/kernel"

import { StripeProcessor } from "@taskmeter/payments-stripe"
import { MemoryStore } from "@taskmeter/storage-memory"
import { http, HttpResponse } from "msw"
import { charge, dispute, fake, options, server, session, signed } from "./support/FakeStripe.ts"
import type { Signed } from "./support/FakeStripe.ts"

const USD = 1_000_000
const bounds = { minMicros: 5 * USD, maxMicros: 500 * USD, presetsMicros: [10 * USD, 25 * USD] }

const services = () =>
  Layer.mergeAll(Payments.layer(bounds), Ledger.layer).pipe(
    Layer.provideMerge(StripeProcessor.layer(options)),
    Layer.provideMerge(MemoryStore.layer)
  )

/** Each case on a fresh store, ending with a clean audit. */
const test = (title: string, body: Effect.Effect<void, unknown, Payments.Payments | Ledger.Ledger | AccountStore.AccountStore>) =>
  it.effect(title, () =>
    Effect.gen(function* () {
      yield* body
      expect(yield* Ledger.Ledger.use((ledger) => ledger.audit)).toEqual([])
    }).pipe(Effect.provide(services()))
  )

const account = Effect.map(
  AccountStore.AccountStore.use((store) =>
    store.createAccount({ id: Ids.makeAccountId(), name: "buyer", createdAt: new Date() })
  ),
  (created) => created.id
)

const deliver = (event: Signed) => Payments.Payments.use((payments) => payments.receive(event.payload, event.signature))

const figures = (accountId: Ids.AccountId) => Ledger.Ledger.use((ledger) => ledger.balances(accountId))

const entries = (accountId: Ids.AccountId) =>
  Effect.map(
    Ledger.Ledger.use((ledger) => ledger.usage(accountId, { limit: 100 })),
    (usage) => usage.entries.map((entry) => [entry.kind, entry.amountMicros, entry.note]).reverse()
  )

const unapplied = Payments.Payments.use((payments) => payments.events({ unappliedOnly: true, limit: 100 }))

const bought = (cents: number, paymentIntent: string) =>
  Effect.gen(function* () {
    const accountId = yield* account
    yield* deliver(signed("checkout.session.completed", session(accountId, paymentIntent, cents)))
    return accountId
  })

describe("checkout", () => {
  test(
    "a top-up is a USD Checkout Session for the account, and its URL",
    Effect.gen(function* () {
      const accountId = yield* account
      const checkout = yield* Payments.Payments.use((payments) => payments.checkout(accountId, 25 * USD))
      expect(checkout).toEqual({ id: "cs_test_1", url: "https://checkout.stripe.com/c/pay/cs_test_1" })
      const sent = Object.fromEntries(fake.sessions[0] ?? [])
      expect(sent).toMatchObject({
        mode: "payment",
        "line_items[0][quantity]": "1",
        "line_items[0][price_data][currency]": "usd",
        "line_items[0][price_data][unit_amount]": "2500",
        client_reference_id: accountId,
        "metadata[accountId]": accountId,
        "payment_intent_data[metadata][accountId]": accountId,
        success_url: "https://app.example.test/console?topup=paid",
        cancel_url: "https://app.example.test/console?topup=cancelled"
      })
    })
  )

  test(
    "an amount outside the bounds, or not whole cents, is refused before Stripe is asked",
    Effect.gen(function* () {
      const accountId = yield* account
      for (const amount of [4 * USD, 501 * USD, 10 * USD + 5_000, 0, -USD]) {
        const error = yield* Effect.flip(Payments.Payments.use((payments) => payments.checkout(accountId, amount)))
        expect(error._tag).toBe("InvalidRequest")
        expect(error.message).toContain("from 5000000 ($5.00) to 500000000 ($500.00)")
      }
      expect(fake.sessions).toEqual([])
    })
  )
})

describe("webhooks", () => {
  test(
    "a completed session grants once, however often it is delivered, naming the payment",
    Effect.gen(function* () {
      const accountId = yield* account
      const completed = signed("checkout.session.completed", session(accountId, "pi_1", 2500))
      const kept = yield* deliver(completed)
      expect(kept?.appliedAt).not.toBeNull()
      yield* deliver(completed)
      yield* deliver(signed("checkout.session.completed", session(accountId, "pi_1", 2500)))
      yield* deliver(signed("checkout.session.async_payment_succeeded", session(accountId, "pi_1", 2500)))
      expect(yield* entries(accountId)).toEqual([["grant", 25 * USD, "stripe payment pi_1: top-up"]])
      expect(yield* Payments.Payments.use((payments) => payments.payments(accountId))).toMatchObject([
        { processor: "stripe", paymentId: "pi_1", amountMicros: 25 * USD }
      ])
    })
  )

  test(
    "a delayed payment grants on async_payment_succeeded; a failed or expired one grants nothing and is kept",
    Effect.gen(function* () {
      const accountId = yield* account
      expect(yield* deliver(signed("checkout.session.completed", session(accountId, "pi_slow", 1000, false)))).toBeUndefined()
      expect(yield* entries(accountId)).toEqual([])
      yield* deliver(signed("checkout.session.async_payment_succeeded", session(accountId, "pi_slow", 1000)))
      const failed = yield* deliver(signed("checkout.session.async_payment_failed", session(accountId, "pi_bad", 1000, false)))
      const expired = yield* deliver(
        signed("checkout.session.expired", { ...session(accountId, "pi_x", 1000, false), payment_intent: null })
      )
      expect(failed?.event).toMatchObject({ _tag: "PurchaseFailed", paymentId: "pi_bad", reason: "payment failed" })
      expect(expired?.event).toMatchObject({ _tag: "PurchaseFailed", paymentId: "cs_pi_x", reason: "checkout expired" })
      expect(yield* entries(accountId)).toEqual([["grant", 10 * USD, "stripe payment pi_slow: top-up"]])
      const kept = yield* Payments.Payments.use((payments) => payments.events({ unappliedOnly: false, limit: 10 }))
      expect(kept.map((event) => event.event._tag)).toEqual(["PurchaseFailed", "PurchaseFailed", "PurchaseCompleted"])
    })
  )

  test(
    "a session paid in another currency grants nothing and is kept with its reason",
    Effect.gen(function* () {
      const accountId = yield* account
      const kept = yield* deliver(
        signed("checkout.session.completed", { ...session(accountId, "pi_eur", 2500), currency: "eur" })
      )
      expect(kept?.event).toMatchObject({
        _tag: "PurchaseFailed",
        paymentId: "pi_eur",
        reason: "paid in EUR, not USD: not granted"
      })
      expect(yield* entries(accountId)).toEqual([])
      expect((yield* figures(accountId)).balanceMicros).toBe(0)
    })
  )

  test(
    "refunds, partial then full, are refund entries even below zero, and put the account in payment review",
    Effect.gen(function* () {
      const accountId = yield* bought(2000, "pi_r")
      yield* deliver(signed("charge.refunded", charge("pi_r", 2000, 500)))
      expect((yield* figures(accountId)).paymentReview).toBe(false)
      // The credits are spent meanwhile: the full refund takes the balance below zero.
      yield* Ledger.Ledger.use((ledger) => ledger.adjust(accountId, -14 * USD, { note: "spent" }))
      const full = signed("charge.refunded", charge("pi_r", 2000, 2000))
      yield* deliver(full)
      yield* deliver(full)
      expect(yield* figures(accountId)).toEqual({
        balanceMicros: -14 * USD,
        reservedMicros: 0,
        availableMicros: -14 * USD,
        paymentReview: true
      })
      expect((yield* entries(accountId)).filter(([kind]) => kind === "refund")).toEqual([
        ["refund", 5 * USD, "stripe payment pi_r: refund"],
        ["refund", 15 * USD, "stripe payment pi_r: refund"]
      ])
    })
  )

  test(
    "a refund before its purchase is kept, then applied when the purchase arrives",
    Effect.gen(function* () {
      const accountId = yield* account
      const early = yield* deliver(signed("charge.refunded", charge("pi_o", 3000, 1000)))
      expect(early?.appliedAt).toBeNull()
      expect(early?.problem).toBe("payment pi_o not applied yet")
      expect((yield* unapplied).length).toBe(1)
      yield* deliver(signed("checkout.session.completed", session(accountId, "pi_o", 3000)))
      expect(yield* unapplied).toEqual([])
      expect((yield* entries(accountId)).map(([kind, amount]) => [kind, amount])).toEqual([
        ["grant", 30 * USD],
        ["refund", 10 * USD]
      ])
    })
  )

  test(
    "an opened dispute holds its amount; won releases it, lost releases it and refunds",
    Effect.gen(function* () {
      const accountId = yield* bought(5000, "pi_d")
      yield* deliver(signed("charge.dispute.created", dispute("pi_d", "dp_1", 2000, "needs_response")))
      expect((yield* figures(accountId)).availableMicros).toBe(30 * USD)
      yield* deliver(signed("charge.dispute.closed", dispute("pi_d", "dp_1", 2000, "won")))
      expect((yield* figures(accountId)).availableMicros).toBe(50 * USD)
      yield* deliver(signed("charge.dispute.created", dispute("pi_d", "dp_2", 5000, "needs_response")))
      yield* deliver(signed("charge.dispute.closed", dispute("pi_d", "dp_2", 5000, "lost")))
      expect(yield* figures(accountId)).toMatchObject({ balanceMicros: 0, paymentReview: false })
      expect(yield* entries(accountId)).toEqual([
        ["grant", 50 * USD, "stripe payment pi_d: top-up"],
        ["adjustment", -20 * USD, "stripe payment pi_d: dispute dp_1 opened, amount held"],
        ["adjustment", 20 * USD, "stripe payment pi_d: dispute dp_1 won, hold released"],
        ["adjustment", -50 * USD, "stripe payment pi_d: dispute dp_2 opened, amount held"],
        ["adjustment", 50 * USD, "stripe payment pi_d: dispute dp_2 lost, hold released"],
        ["refund", 50 * USD, "stripe payment pi_d: dispute dp_2 lost"]
      ])
    })
  )

  test(
    "an event for an unknown account is kept for the operator, not dropped",
    Effect.gen(function* () {
      const late = Ids.makeAccountId()
      const kept = yield* deliver(signed("checkout.session.completed", session(late, "pi_u", 1000)))
      expect(kept?.problem).toBe(`no account ${late}`)
      expect((yield* unapplied).map((event) => event.event)).toMatchObject([{ _tag: "PurchaseCompleted", paymentId: "pi_u" }])
      const retry = Payments.Payments.use((payments) => payments.retryUnapplied)
      expect(yield* retry).toBe(0)
      // The operator creates the account the checkout named; the next sweep applies the purchase.
      yield* AccountStore.AccountStore.use((store) => store.createAccount({ id: late, name: "late", createdAt: new Date() }))
      expect(yield* retry).toBe(1)
      expect(yield* unapplied).toEqual([])
      expect((yield* figures(late)).balanceMicros).toBe(10 * USD)
    })
  )

  test(
    "a bad signature is refused and keeps nothing; event types of no use are not kept",
    Effect.gen(function* () {
      const accountId = yield* account
      const good = signed("checkout.session.completed", session(accountId, "pi_s", 1000))
      const forged = signed("checkout.session.completed", session(accountId, "pi_s", 1000), "whsec_wrong")
      const tampered = { payload: good.payload.replace('"amount_total":1000', '"amount_total":99999'), signature: good.signature }
      for (const attempt of [forged, tampered, { payload: good.payload, signature: "" }]) {
        const error = yield* Effect.flip(deliver(attempt))
        expect(error).toMatchObject({ _tag: "PaymentProcessorError", reason: "BadSignature" })
      }
      expect(yield* deliver(signed("customer.created", { id: "cus_1", object: "customer" }))).toBeUndefined()
      expect(yield* Payments.Payments.use((payments) => payments.events({ unappliedOnly: false, limit: 10 }))).toEqual([])
      expect(yield* entries(accountId)).toEqual([])
    })
  )
})

describe("reconciliation", () => {
  test(
    "reports the payments the ledger lacks and the refunds it lacks, also of payments made before the period",
    Effect.gen(function* () {
      const accountId = yield* bought(2000, "pi_a")
      yield* deliver(signed("checkout.session.completed", session(accountId, "pi_old", 1000)))
      yield* deliver(signed("charge.refunded", charge("pi_old", 1000, 1000)))
      fake.charges.push(charge("pi_a", 2000, 500, accountId), charge("pi_b", 700))
      fake.refunds.push(
        { id: "re_1", object: "refund", amount: 500, charge: "ch_pi_a" },
        { id: "re_2", object: "refund", amount: 1000, charge: "ch_pi_old" }
      )
      const old = charge("pi_old", 1000, 1000, accountId)
      // The old charge is not in the period's list, only retrievable.
      server.use(http.get("https://api.stripe.com/v1/charges/ch_pi_old", () => HttpResponse.json(old)))
      const found = yield* Payments.Payments.use((payments) =>
        payments.reconcile({ from: new Date("2030-01-01T00:00:00Z"), to: new Date("2030-01-02T00:00:00Z") })
      )
      expect(found).toEqual([
        { paymentId: "pi_a", accountId, problem: "refund_mismatch", processorMicros: 5 * USD, ledgerMicros: 0 },
        { paymentId: "pi_b", accountId: "acct_x", problem: "missing", processorMicros: 7 * USD, ledgerMicros: 0 }
      ])
    })
  )
})
