/**
 * The billing endpoints as an HttpApi group, for the OpenAPI document only (OpenApiDocument): they
 * are served as raw routes (billing/BillingServer) that answer 404 REQUEST_NOT_FOUND while no
 * payment processor is configured, and the webhook reads its body raw to verify the signature.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Errors } from "@taskmeter/kernel"
import { Authentication, requireScope } from "./Security.ts"

export const TopUps = Schema.Struct({
  currency: Schema.Literal("USD"),
  minMicros: Schema.Int.annotate({ description: "The smallest top-up, USD micro-units." }),
  maxMicros: Schema.Int.annotate({ description: "The largest top-up." }),
  presetsMicros: Schema.Array(Schema.Int).annotate({ description: "The amounts offered as choices." })
}).annotate({ identifier: "TopUps" })

export const CheckoutRequest = Schema.Struct({
  amountMicros: Schema.Int.annotate({
    description: "The top-up in USD micro-units: whole cents between minMicros and maxMicros of GET /api/v1/billing/topups."
  })
}).annotate({ identifier: "CheckoutRequest" })

export const Checkout = Schema.Struct({
  checkoutId: Schema.String.annotate({ description: "The payment processor's id of the checkout." }),
  url: Schema.String.annotate({ description: "Send the customer here to pay; credits arrive once the payment completes." }),
  amountMicros: Schema.Int
}).annotate({ identifier: "Checkout" })

export const WebhookReceipt = Schema.Struct({
  received: Schema.Literal(true),
  applied: Schema.Boolean.annotate({ description: "False for an event kept for later or of no use to the ledger." }),
  problem: Schema.NullOr(Schema.String).annotate({ description: "Why a kept event is not applied yet." })
}).annotate({ identifier: "WebhookReceipt" })

export const BillingApi = HttpApiGroup.make("billing")
  .add(
    HttpApiEndpoint.get("topups", "/api/v1/billing/topups", {
      success: TopUps,
      error: [Errors.RequestNotFound]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Top-up amounts",
        description:
          "The amounts a checkout accepts. REQUEST_NOT_FOUND when this server offers no top-ups. No credentials needed."
      })
    ),
    HttpApiEndpoint.post("checkout", "/api/v1/billing/checkout", {
      payload: CheckoutRequest,
      success: Checkout,
      error: [Errors.InvalidRequest, Errors.InputTooLarge, Errors.RequestNotFound, Errors.ApiUnavailable]
    })
      .middleware(Authentication)
      .annotateMerge(
        OpenApi.annotations({
          summary: "Start a top-up",
          description:
            "A hosted checkout of the payment processor (Stripe) for the caller's account. Credits are granted " +
            "when the processor reports the payment, once. REQUEST_NOT_FOUND when this server offers no top-ups."
        })
      )
      .annotateMerge(requireScope("billing:create")),
    HttpApiEndpoint.post("stripeWebhook", "/api/v1/billing/webhooks/stripe", {
      payload: Schema.String.annotate({ description: "The event exactly as Stripe sent it." }),
      success: WebhookReceipt,
      error: [Errors.InvalidRequest, Errors.InputTooLarge, Errors.RequestNotFound, Errors.ApiUnavailable]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Stripe's webhook events",
        description:
          "For Stripe only: the event's `Stripe-Signature` header is the credential (INVALID_REQUEST when it does not " +
          "verify). Each event is kept and applied to the ledger once, however often it is delivered."
      })
    )
  )
  .annotate(OpenApi.Description, "Top-ups through a payment processor.")
