/**
 * Stripe's REST API as msw handlers for one test file: Checkout Sessions created (their form
 * bodies recorded), charges and refunds listed from arrays the test fills; and webhook events
 * built like Stripe's and signed with the client's own test-header helper.
 */
import Stripe from "stripe"
import { Redacted } from "effect"
import { http, HttpResponse } from "msw"
import { setupServer } from "msw/node"
import { afterAll, afterEach, beforeAll } from "vitest"
import type { StripeProcessor } from "@taskmeter/payments-stripe"

const API = "https://api.stripe.com/v1"

export const WEBHOOK_SECRET = "whsec_test_secret"

export const options: StripeProcessor.Options = {
  secretKey: Redacted.make("sk_test_123"),
  webhookSecret: Redacted.make(WEBHOOK_SECRET),
  returnUrl: "https://app.example.test/console"
}

export const fake = {
  sessions: [] as Array<URLSearchParams>,
  charges: [] as Array<object>,
  refunds: [] as Array<object>,
  retrieved: [] as Array<string>
}

const list = (url: string, data: ReadonlyArray<object>) => HttpResponse.json({ object: "list", url, has_more: false, data })

export const server = setupServer(
  http.post(`${API}/checkout/sessions`, async ({ request }) => {
    fake.sessions.push(new URLSearchParams(await request.text()))
    const id = `cs_test_${fake.sessions.length}`
    return HttpResponse.json({ id, object: "checkout.session", url: `https://checkout.stripe.com/c/pay/${id}` })
  }),
  http.get(`${API}/charges`, () => list("/v1/charges", fake.charges)),
  http.get(`${API}/refunds`, () => list("/v1/refunds", fake.refunds)),
  http.get(`${API}/charges/:id`, ({ params }) => {
    fake.retrieved.push(String(params["id"]))
    const found = fake.charges.find((charge) => (charge as { id: string }).id === params["id"])
    return found === undefined
      ? HttpResponse.json({ error: { message: "No such charge" } }, { status: 404 })
      : HttpResponse.json(found)
  })
)

beforeAll(() => server.listen({ onUnhandledFrame: "error" }))
afterEach(() => {
  server.resetHandlers()
  fake.sessions.length = 0
  fake.charges.length = 0
  fake.refunds.length = 0
  fake.retrieved.length = 0
})
afterAll(() => server.close())

const signer = new Stripe("sk_test_123", { httpClient: Stripe.createFetchHttpClient() })

let counter = 0

export interface Signed {
  readonly payload: string
  readonly signature: string
}

/** A Stripe event of `type` about `object`, serialised and signed as Stripe would. */
export const signed = (type: string, object: object, secret = WEBHOOK_SECRET): Signed => {
  const payload = JSON.stringify({
    id: `evt_${++counter}_${Date.now()}`,
    object: "event",
    api_version: Stripe.API_VERSION,
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
    data: { object }
  })
  return { payload, signature: signer.webhooks.generateTestHeaderString({ payload, secret }) }
}

export const session = (accountId: string, paymentIntent: string, cents: number, paid = true) => ({
  id: `cs_${paymentIntent}`,
  object: "checkout.session",
  mode: "payment",
  amount_total: cents,
  currency: "usd",
  client_reference_id: accountId,
  metadata: { accountId },
  payment_intent: paymentIntent,
  payment_status: paid ? "paid" : "unpaid"
})

export const charge = (paymentIntent: string, cents: number, refundedCents = 0, accountId = "acct_x") => ({
  id: `ch_${paymentIntent}`,
  object: "charge",
  amount: cents,
  amount_refunded: refundedCents,
  currency: "usd",
  created: Math.floor(Date.UTC(2030, 0, 1) / 1000),
  metadata: { accountId },
  payment_intent: paymentIntent,
  refunded: refundedCents === cents,
  status: "succeeded"
})

export const dispute = (paymentIntent: string, id: string, cents: number, status: string) => ({
  id,
  object: "dispute",
  amount: cents,
  charge: `ch_${paymentIntent}`,
  currency: "usd",
  payment_intent: paymentIntent,
  status
})
