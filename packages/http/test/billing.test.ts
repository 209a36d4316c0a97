/**
 * Top-ups through the composed server with Stripe configured, Stripe's REST API played by msw and
 * its webhooks signed by the official client: checkout, every webhook answered by either of two
 * servers sharing PostgreSQL (concurrent deliveries grant once and raise one payment webhook), a refund that puts the account in
 * payment review, the admin commands' payments, and the books balancing. Unconfigured: 404s.
 */
import { randomUUID } from "node:crypto"
import { ConfigProvider, Effect, Option, Redacted } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { http, HttpResponse, passthrough } from "msw"
import { setupServer } from "msw/node"
import Stripe from "stripe"
import { afterAll, afterEach, beforeAll } from "vitest"
import type { Money } from "@taskmeter/kernel"
import * as Main from "../src/main.ts"
import { admin, fetchJson, SERVED, SERVED_PRICE, serverOn } from "./support/Servers.ts"
import { databaseUrl, freshSchema } from "./support/stores.ts"

const WEBHOOK_SECRET = "whsec_http_suite"
const USD = 1_000_000

const sessions: Array<URLSearchParams> = []
const stripeApi = setupServer(
  http.post("https://api.stripe.com/v1/checkout/sessions", async ({ request }) => {
    sessions.push(new URLSearchParams(await request.text()))
    return HttpResponse.json({
      id: "cs_test_http",
      object: "checkout.session",
      url: "https://checkout.stripe.com/c/pay/cs_test_http"
    })
  }),
  // The servers under test, and their admin services, are reached for real.
  http.all(/^http:\/\/127\.0\.0\.1:\d+\//, () => passthrough())
)
beforeAll(() => stripeApi.listen({ onUnhandledFrame: "error" }))
afterEach(() => {
  sessions.length = 0
  stripeApi.resetHandlers()
})
afterAll(() => stripeApi.close())

const signer = new Stripe("sk_test_http", { httpClient: Stripe.createFetchHttpClient() })

let counter = 0
const signed = (type: string, object: object, secret = WEBHOOK_SECRET) => {
  const payload = JSON.stringify({ id: `evt_http_${++counter}`, object: "event", type, data: { object } })
  return { payload, signature: signer.webhooks.generateTestHeaderString({ payload, secret }) }
}

const deliver = (url: string, event: { readonly payload: string; readonly signature: string }) =>
  fetchJson(`${url}/api/v1/billing/webhooks/stripe`, {
    method: "POST",
    headers: { "content-type": "application/json", "stripe-signature": event.signature },
    body: event.payload
  })

const session = (accountId: string, paymentIntent: string, cents: number) => ({
  id: `cs_${paymentIntent}`,
  object: "checkout.session",
  amount_total: cents,
  currency: "usd",
  client_reference_id: accountId,
  metadata: { accountId },
  payment_intent: paymentIntent,
  payment_status: "paid"
})

const stripeEnv = ConfigProvider.layer(
  ConfigProvider.fromEnvRecord({
    STRIPE_SECRET_KEY: "sk_test_http",
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    TOPUP_MIN_USD: "5",
    TOPUP_MAX_USD: "200",
    TOPUP_PRESETS_USD: "10, 25"
  })
)

const onPostgres = (prefix: string) =>
  Effect.map(
    freshSchema(prefix),
    (schema): Main.Settings => ({
      ...Main.defaults,
      databaseUrl: Option.some(Redacted.make(databaseUrl)),
      databaseSchema: Option.some(schema),
      workers: false
    })
  )

const json = (secret: string, body: unknown): RequestInit => ({
  method: "POST",
  headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
  body: JSON.stringify(body)
})

describe("top-ups through Stripe", () => {
  it.live("without Stripe settings the billing routes answer 404 and the CLI grant remains", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const url = yield* serverOn(yield* onPostgres("http_billing_off"))
        const { key } = yield* admin(url, (client) => client.AccountCreate({ name: "acme" }))
        const checkout = yield* fetchJson(`${url}/api/v1/billing/checkout`, json(key.secret, { amountMicros: 10 * USD }))
        expect(checkout).toMatchObject({ status: 404, body: { code: "REQUEST_NOT_FOUND" } })
        expect(checkout.body.error).toContain("STRIPE_SECRET_KEY")
        expect((yield* deliver(url, signed("checkout.session.completed", {}))).status).toBe(404)
        expect((yield* fetchJson(`${url}/api/v1/billing/topups`)).status).toBe(404)
        const reconcile = admin(url, (client) =>
          client.PaymentReconcile({ from: "2030-01-01T00:00:00Z", to: "2030-01-02T00:00:00Z" })
        )
        expect((yield* Effect.flip(reconcile)).reason).toBe("PaymentsNotConfigured")
        const granted = yield* admin(url, (client) =>
          client.CreditsGrant({ accountId: key.key.accountId, amountMicros: (3 * USD) as Money.Micros })
        )
        expect(granted.balances.balanceMicros).toBe(3 * USD)
      })
    )
  )

  it.live(
    "checkout, webhooks at two servers at once, a refund into payment review, and the operator's view",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const settings = yield* onPostgres("http_billing")
          const one = yield* serverOn(settings).pipe(Effect.provide(stripeEnv))
          const other = yield* serverOn(settings).pipe(Effect.provide(stripeEnv))
          const { account, key } = yield* admin(one, (client) => client.AccountCreate({ name: "buyer" }))

          expect((yield* fetchJson(`${one}/api/v1/billing/topups`)).body).toEqual({
            currency: "USD",
            minMicros: 5 * USD,
            maxMicros: 200 * USD,
            presetsMicros: [10 * USD, 25 * USD]
          })
          const checkout = yield* fetchJson(`${one}/api/v1/billing/checkout`, json(key.secret, { amountMicros: 25 * USD }))
          expect(checkout).toMatchObject({
            status: 200,
            body: { checkoutId: "cs_test_http", url: "https://checkout.stripe.com/c/pay/cs_test_http", amountMicros: 25 * USD }
          })
          expect(sessions[0]?.get("client_reference_id")).toBe(account.id)
          const tooSmall = yield* fetchJson(`${one}/api/v1/billing/checkout`, json(key.secret, { amountMicros: USD }))
          expect(tooSmall).toMatchObject({ status: 400, body: { code: "INVALID_REQUEST" } })
          const readOnly = yield* admin(one, (client) =>
            client.KeyCreate({ accountId: account.id, scopes: ["jobs:read", "usage:read"] })
          )
          const refused = yield* fetchJson(`${one}/api/v1/billing/checkout`, json(readOnly.secret, { amountMicros: 25 * USD }))
          expect(refused).toMatchObject({ status: 403, body: { code: "INSUFFICIENT_SCOPE" } })
          expect(sessions.length).toBe(1)

          // Stripe delivers the same event several times, to whichever server: one grant, one payment webhook.
          const hook = yield* fetchJson(
            `${one}/api/v1/webhook-endpoints`,
            json(key.secret, { url: "https://hooks.example.com/payments", events: ["payment.succeeded"] })
          )
          expect(hook.status).toBe(201)
          const completed = signed("checkout.session.completed", session(account.id, "pi_http", 2500))
          const replies = yield* Effect.all(
            [one, other, one, other, one, other].map((url) => deliver(url, completed)),
            { concurrency: "unbounded" }
          )
          expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200, 200, 200, 200])
          expect(replies[0]?.body).toEqual({ received: true, applied: true, problem: null })
          const usage = yield* fetchJson(`${other}/api/v1/usage`, { headers: { authorization: `Bearer ${key.secret}` } })
          expect(usage.body.balanceMicros).toBe(25 * USD)
          expect(usage.body.entries.map((entry: { kind: string; note: string }) => [entry.kind, entry.note])).toEqual([
            ["grant", "stripe payment pi_http: top-up"]
          ])
          const hooked = yield* fetchJson(`${other}/api/v1/webhook-endpoints/${hook.body.id}/deliveries`, {
            headers: { authorization: `Bearer ${key.secret}` }
          })
          expect(hooked.body.data).toMatchObject([
            { type: "payment.succeeded", taskId: null, paymentId: "pi_http", status: "pending", endpointId: hook.body.id }
          ])

          const forged = signed("checkout.session.completed", session(account.id, "pi_forged", 100_00), "whsec_wrong")
          const badSignature = yield* deliver(one, forged)
          expect(badSignature).toMatchObject({ status: 400, body: { code: "INVALID_REQUEST" } })

          // A task holds part of the credits; the full refund then leaves less than it holds.
          const submitted = yield* fetchJson(`${one}/api/v1/jobs`, {
            ...json(key.secret, { model: SERVED, input: { prompt: "tide tables" } }),
            headers: {
              authorization: `Bearer ${key.secret}`,
              "content-type": "application/json",
              "idempotency-key": randomUUID()
            }
          })
          expect(submitted.status).toBe(202)
          const refund = { id: "ch_pi_http", object: "charge", amount: 2500, amount_refunded: 2500, payment_intent: "pi_http" }
          expect((yield* deliver(other, signed("charge.refunded", refund))).body.applied).toBe(true)
          const blocked = yield* fetchJson(`${one}/api/v1/jobs`, {
            ...json(key.secret, { model: SERVED, input: { prompt: "tide tables" } }),
            headers: {
              authorization: `Bearer ${key.secret}`,
              "content-type": "application/json",
              "idempotency-key": randomUUID()
            }
          })
          expect(blocked).toMatchObject({ status: 409, body: { code: "PAYMENT_REVIEW_REQUIRED" } })
          const after = yield* fetchJson(`${one}/api/v1/usage`, { headers: { authorization: `Bearer ${key.secret}` } })
          expect(after.body).toMatchObject({ balanceMicros: 0, reservedMicros: SERVED_PRICE, paymentReview: true })
          expect(after.body.entries[0]).toMatchObject({
            kind: "refund",
            amountMicros: 25 * USD,
            note: "stripe payment pi_http: refund"
          })

          // An event for a payment never seen is kept for the operator.
          const orphan = { ...refund, id: "ch_pi_nowhere", payment_intent: "pi_nowhere" }
          expect((yield* deliver(one, signed("charge.refunded", orphan))).body).toEqual({
            received: true,
            applied: false,
            problem: "payment pi_nowhere not applied yet"
          })
          const payments = yield* admin(one, (client) => client.PaymentList({ accountId: account.id }))
          expect(payments).toMatchObject([
            { processor: "stripe", paymentId: "pi_http", amountMicros: 25 * USD, refundedMicros: 25 * USD }
          ])
          const unapplied = yield* admin(other, (client) => client.PaymentEvents({ unapplied: true }))
          expect(unapplied).toMatchObject([{ kind: "Refunded", paymentId: "pi_nowhere", appliedAt: null }])

          // Stripe's books for the day: the refunded payment agrees, one payment never reached the ledger.
          const list = (url: string, data: ReadonlyArray<object>) =>
            HttpResponse.json({ object: "list", url, has_more: false, data })
          const charge = (id: string, cents: number, refundedCents: number) => ({
            id: `ch_${id}`,
            object: "charge",
            amount: cents,
            amount_refunded: refundedCents,
            created: Math.floor(Date.now() / 1000),
            metadata: {},
            payment_intent: id,
            status: "succeeded"
          })
          stripeApi.use(
            http.get("https://api.stripe.com/v1/charges", () =>
              list("/v1/charges", [charge("pi_http", 2500, 2500), charge("pi_lost", 1000, 0)])
            ),
            http.get("https://api.stripe.com/v1/refunds", () => list("/v1/refunds", []))
          )
          const day = { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 3_600_000).toISOString() }
          expect(yield* admin(other, (client) => client.PaymentReconcile(day))).toEqual([
            { paymentId: "pi_lost", accountId: null, problem: "missing", processorMicros: 10 * USD, ledgerMicros: 0 }
          ])
          expect(yield* admin(one, (client) => client.Audit())).toEqual([])
        })
      ),
    60_000
  )

  it.live("bad input to the billing routes is a 4xx that says what to fix, and stores nothing", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const url = yield* serverOn(yield* onPostgres("http_billing_bad")).pipe(Effect.provide(stripeEnv))
        const { key } = yield* admin(url, (client) => client.AccountCreate({ name: "acme" }))
        const checkout = (init: RequestInit) => fetchJson(`${url}/api/v1/billing/checkout`, init)
        for (const body of [{}, { amountMicros: "25" }, { amountMicros: 2.5 }, [25_000_000]]) {
          expect(yield* checkout(json(key.secret, body))).toMatchObject({ status: 400, body: { code: "INVALID_REQUEST" } })
        }
        const notJson = yield* checkout({ ...json(key.secret, {}), body: "amountMicros=25" })
        expect(notJson).toMatchObject({ status: 400, body: { code: "INVALID_REQUEST" } })
        const anonymous = yield* checkout({ method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
        expect(anonymous).toMatchObject({ status: 401, body: { code: "AUTH_REQUIRED" } })
        expect(sessions).toEqual([])

        const unsigned = yield* deliver(url, { payload: "{}", signature: "" })
        expect(unsigned).toMatchObject({ status: 400, body: { code: "INVALID_REQUEST" } })
        const huge = yield* deliver(url, { payload: "x".repeat(300 * 1024), signature: "t=1,v1=00" })
        expect(huge).toMatchObject({ status: 413, body: { code: "INPUT_TOO_LARGE" } })
        const stale = signed("checkout.session.completed", session(key.key.accountId, "pi_stale", 1000))
        const replayedLater = yield* deliver(url, {
          payload: stale.payload,
          signature: signer.webhooks.generateTestHeaderString({
            payload: stale.payload,
            secret: WEBHOOK_SECRET,
            timestamp: Math.floor(Date.now() / 1000) - 3600
          })
        })
        expect(replayedLater).toMatchObject({ status: 400, body: { code: "INVALID_REQUEST" } })
        expect(yield* admin(url, (client) => client.PaymentEvents({ unapplied: false }))).toEqual([])
      })
    )
  )
})
