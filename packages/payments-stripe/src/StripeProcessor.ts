/**
 * The PaymentProcessor on Stripe, through the official client on the fetch HTTP client: a
 * Checkout Session in USD per top-up (the account in `client_reference_id` and in the
 * PaymentIntent's metadata), webhook events verified with the client's own verifier, and the
 * succeeded charges of a period plus those refunded in it, for reconciliation.
 */
import Stripe from "stripe"
import { Effect, Layer, Redacted } from "effect"
import { PaymentProcessor } from "@taskmeter/kernel"
import { micros, PROCESSOR, toPaymentEvent } from "./StripeEvents.ts"

export interface Options {
  readonly secretKey: Redacted.Redacted
  readonly webhookSecret: Redacted.Redacted
  /** Where Checkout sends the customer back, paid (`?topup=paid`) or not (`?topup=cancelled`). */
  readonly returnUrl: string
  /** The name on the checkout's line item. */
  readonly productName?: string | undefined
}

const unavailable = (what: string) => (cause: unknown) =>
  new PaymentProcessor.PaymentProcessorError({
    reason: "Unavailable",
    message: `Stripe could not ${what}: ${cause instanceof Error ? cause.message : String(cause)}`,
    cause
  })

const withQuery = (url: string, topup: string): string => {
  const target = new URL(url)
  target.searchParams.set("topup", topup)
  return target.toString()
}

const seconds = (date: Date): number => Math.floor(date.getTime() / 1000)

export const make = (options: Options): PaymentProcessor.PaymentProcessorV1 => {
  const stripe = new Stripe(Redacted.value(options.secretKey), {
    httpClient: Stripe.createFetchHttpClient(),
    maxNetworkRetries: 2
  })
  const webhookSecret = Redacted.value(options.webhookSecret)

  const charges = (period: PaymentProcessor.Period) =>
    Effect.tryPromise({
      try: async () => {
        const created = { gte: seconds(period.from), lt: seconds(period.to) }
        const found = new Map<string, Stripe.Charge>()
        for await (const charge of stripe.charges.list({ created, limit: 100 })) {
          if (charge.status === "succeeded") found.set(charge.id, charge)
        }
        // A refund in the period may be of a payment made before it.
        for await (const refund of stripe.refunds.list({ created, limit: 100 })) {
          const chargeId = typeof refund.charge === "string" ? refund.charge : refund.charge?.id
          if (chargeId !== undefined && !found.has(chargeId)) found.set(chargeId, await stripe.charges.retrieve(chargeId))
        }
        return Array.from(found.values())
      },
      catch: unavailable("list the payments")
    })

  return {
    specificationVersion: "v1",
    name: PROCESSOR,
    checkout: (request) =>
      Effect.tryPromise({
        try: () =>
          stripe.checkout.sessions.create({
            mode: "payment",
            line_items: [
              {
                quantity: 1,
                price_data: {
                  currency: "usd",
                  unit_amount: request.amountMicros / 10_000,
                  product_data: { name: options.productName ?? "Credits" }
                }
              }
            ],
            client_reference_id: request.accountId,
            metadata: { accountId: request.accountId },
            payment_intent_data: { metadata: { accountId: request.accountId } },
            success_url: withQuery(options.returnUrl, "paid"),
            cancel_url: withQuery(options.returnUrl, "cancelled")
          }),
        catch: unavailable("create the checkout")
      }).pipe(
        Effect.flatMap((session) =>
          session.url === null
            ? Effect.fail(unavailable("create the checkout")(new Error("the session has no URL")))
            : Effect.succeed({ id: session.id, url: session.url })
        )
      ),
    decode: (payload, signature) =>
      Effect.try({
        try: () => toPaymentEvent(stripe.webhooks.constructEvent(payload, signature, webhookSecret)),
        catch: (cause) =>
          new PaymentProcessor.PaymentProcessorError({
            reason: "BadSignature",
            message: "The Stripe-Signature header does not sign this body with the webhook secret.",
            cause
          })
      }),
    payments: (period) =>
      Effect.map(charges(period), (found) =>
        found.map(
          (charge): PaymentProcessor.ProcessorPayment => ({
            paymentId:
              typeof charge.payment_intent === "string" ? charge.payment_intent : (charge.payment_intent?.id ?? charge.id),
            accountId: charge.metadata.accountId ?? null,
            amountMicros: micros(charge.amount),
            refundedMicros: micros(charge.amount_refunded),
            createdAt: new Date(charge.created * 1000)
          })
        )
      )
  }
}

/** The processor as the kernel's PaymentProcessor service. */
export const layer = (options: Options): Layer.Layer<PaymentProcessor.PaymentProcessor> =>
  Layer.sync(PaymentProcessor.PaymentProcessor, () => make(options))
