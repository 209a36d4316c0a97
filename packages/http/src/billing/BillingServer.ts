/**
 * The billing routes beside the API, present whatever the configuration: GET /api/v1/billing/topups
 * (public: the amounts offered), POST /api/v1/billing/checkout (`billing:create`; `{ amountMicros }`
 * → `{ checkoutId, url, amountMicros }`) and POST /api/v1/billing/webhooks/stripe (the raw body,
 * verified by its Stripe-Signature; 400 when it does not verify), as BillingApi documents them.
 * Without a configured processor each answers 404 REQUEST_NOT_FOUND.
 */
import { Effect, Option, Schema } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Errors, Payments } from "@taskmeter/kernel"
import type { PaymentProcessor } from "@taskmeter/kernel"
import { CheckoutRequest } from "../api/BillingApi.ts"
import { authenticate } from "../chat/ChatAuth.ts"
import * as JsonBody from "../JsonBody.ts"

/** Stripe's events are a few KB; anything past this is not one. */
const MAX_WEBHOOK_BYTES = 256 * 1024

const notOffered = new Errors.RequestNotFound({
  message:
    "Top-ups are not offered on this server: the operator has not configured a payment processor (STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET). Ask the operator for credits."
})

const processorFailure = (error: PaymentProcessor.PaymentProcessorError) =>
  error.reason === "BadSignature"
    ? new Errors.InvalidRequest({ message: error.message })
    : new Errors.ApiUnavailable({ message: "The payment processor is unavailable; try again shortly." })

const decodeCheckout = Schema.decodeUnknownEffect(CheckoutRequest)

const amountOf = (body: unknown) =>
  decodeCheckout(body).pipe(
    Effect.map((request) => request.amountMicros),
    Effect.mapError(
      () => new Errors.InvalidRequest({ message: 'Send { "amountMicros": <integer> }: the top-up in USD micro-units.' })
    )
  )

const utf8 = new TextDecoder("utf-8", { fatal: true })

const routes = (payments: Payments.Payments["Service"]) => {
  const topups = Effect.succeed(
    HttpServerResponse.jsonUnsafe({
      currency: "USD",
      minMicros: payments.bounds.minMicros,
      maxMicros: payments.bounds.maxMicros,
      presetsMicros: payments.bounds.presetsMicros
    })
  )

  const checkout = Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const caller = yield* authenticate(request, "billing:create")
    const amountMicros = yield* amountOf(yield* JsonBody.read(request))
    const created = yield* payments
      .checkout(caller.accountId, amountMicros)
      .pipe(Effect.catchTag("PaymentProcessorError", (error) => Effect.fail(processorFailure(error))))
    return HttpServerResponse.jsonUnsafe({ checkoutId: created.id, url: created.url, amountMicros })
  })

  const webhook = Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    yield* JsonBody.checkContentLength(
      request,
      MAX_WEBHOOK_BYTES,
      () => new Errors.InputTooLarge({ message: `A webhook event is at most ${MAX_WEBHOOK_BYTES} bytes.` })
    )
    const bytes = yield* JsonBody.readLimited(request, MAX_WEBHOOK_BYTES)
    const signature = request.headers["stripe-signature"] ?? ""
    let payload: string
    try {
      payload = utf8.decode(bytes)
    } catch {
      return yield* new Errors.InvalidRequest({ message: "The body is not UTF-8 text." })
    }
    const kept = yield* payments
      .receive(payload, signature)
      .pipe(Effect.catchTag("PaymentProcessorError", (error) => Effect.fail(processorFailure(error))))
    // Kept but not applied is still received: the operator sees it, the sweep retries it.
    return HttpServerResponse.jsonUnsafe({
      received: true,
      applied: kept === undefined ? false : kept.appliedAt !== null,
      problem: kept?.problem ?? null
    })
  })
  return { topups, checkout, webhook }
}

/** The billing routes on the HttpRouter in context; the Payments service if provided, else 404s (checkout's after its key). */
export const layer = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const handlers = Option.map(yield* Effect.serviceOption(Payments.Payments), routes)
    const offered = <A, E, R>(
      pick: (handlers: ReturnType<typeof routes>) => Effect.Effect<A, E, R>
    ): Effect.Effect<A, E | Errors.RequestNotFound, R> =>
      Option.match(handlers, { onNone: () => Effect.fail(notOffered), onSome: pick })
    const keyFirst = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => authenticate(request, "billing:create"))
    yield* router.add(
      "GET",
      "/api/v1/billing/topups",
      offered((handlers) => handlers.topups)
    )
    type Checkout = ReturnType<typeof routes>["checkout"]
    const checkout: Effect.Effect<
      HttpServerResponse.HttpServerResponse,
      Effect.Error<Checkout> | Errors.RequestNotFound,
      Effect.Services<Checkout>
    > = Option.match(handlers, {
      onNone: () => Effect.andThen(keyFirst, Effect.fail(notOffered)),
      onSome: (handlers) => handlers.checkout
    })
    yield* router.add("POST", "/api/v1/billing/checkout", checkout)
    yield* router.add(
      "POST",
      "/api/v1/billing/webhooks/stripe",
      offered((handlers) => handlers.webhook)
    )
  })
)
