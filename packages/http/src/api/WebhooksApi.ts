/**
 * Webhooks: the account's endpoints (`/api/v1/webhook-endpoints`: create, list, read, change,
 * delete, rotate the secret), each endpoint's delivery log a page at a time, sending a delivery
 * again, and the account's signing secret for the `webhookUrl` of single submissions. Every
 * delivery is signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Errors, WebhookEvent } from "@taskmeter/kernel"
import { parameterSchemas } from "./OpenApiParameters.ts"
import { Authentication, requireScope } from "./Security.ts"
import { PageSize } from "./UsageApi.ts"

export const SCOPE = "webhooks:manage"

const Instant = Schema.String.annotate({ format: "date-time" })

export const EventType = WebhookEvent.EventType.annotate({
  description:
    "task.running, task.succeeded, task.failed or task.reconciliation_required: the task entered that status " +
    "(data: the task as GET /api/v1/jobs/{id} shows it). payment.succeeded (credits granted), payment.refunded " +
    "(the refunded total grew), payment.disputed (a dispute opened, its amount held) or payment.dispute_closed " +
    "(won: the hold released; lost: released and refunded) (data: a PaymentWebhookData). The OpenAPI document's `webhooks` show each body."
})

export const EventTypes = Schema.Array(EventType).check(Schema.isMinLength(1, { message: "must name at least one event" }))

export const WebhookUrl = Schema.String.annotate({
  description: "A public https URL (no private, loopback or local addresses); at most 2000 characters."
})

export const WebhookEndpoint = Schema.Struct({
  id: Schema.String,
  url: Schema.String,
  events: Schema.Array(EventType),
  enabled: Schema.Boolean,
  disabledReason: Schema.NullOr(Schema.String).annotate({
    description: "Why it is disabled: by its owner, or after failing continuously (the account is told by mail)."
  }),
  previousSecretExpiresAt: Schema.NullOr(Instant).annotate({
    description: "After a rotation, until when deliveries are signed with the previous secret too."
  }),
  createdAt: Instant,
  updatedAt: Instant
}).annotate({ identifier: "WebhookEndpoint" })
export type WebhookEndpoint = typeof WebhookEndpoint.Type

export const WebhookEndpointWithSecret = Schema.Struct({
  ...WebhookEndpoint.fields,
  secret: Schema.String.annotate({
    description: "The signing secret (whsec_...), shown only here: when the endpoint is created and when it is rotated."
  })
}).annotate({ identifier: "WebhookEndpointWithSecret" })

export const WebhookEndpointList = Schema.Struct({ data: Schema.Array(WebhookEndpoint) }).annotate({
  identifier: "WebhookEndpointList"
})

export const CreateWebhookEndpoint = Schema.Struct({
  url: WebhookUrl,
  events: Schema.optionalKey(
    EventTypes.annotate({
      description:
        "The events to deliver; when absent task.succeeded, task.failed and task.reconciliation_required " +
        "(task.running and the payment events only when named)."
    })
  )
}).annotate({ identifier: "CreateWebhookEndpoint" })

export const UpdateWebhookEndpoint = Schema.Struct({
  url: Schema.optionalKey(WebhookUrl),
  events: Schema.optionalKey(EventTypes),
  enabled: Schema.optionalKey(
    Schema.Boolean.annotate({ description: "false stops deliveries; true starts them again (and clears a disabled reason)." })
  )
}).annotate({ identifier: "UpdateWebhookEndpoint" })

export const WebhookAttempt = Schema.Struct({
  at: Instant,
  statusCode: Schema.NullOr(Schema.Int).annotate({ description: "What the endpoint answered; null when no answer came." }),
  latencyMs: Schema.Int,
  responseExcerpt: Schema.NullOr(Schema.String).annotate({ description: "The first 1024 characters of the answer." }),
  error: Schema.NullOr(Schema.String).annotate({ description: "Why the attempt failed; null when it delivered." })
}).annotate({ identifier: "WebhookAttempt" })

export const WebhookDelivery = Schema.Struct({
  id: Schema.String.annotate({ description: "The webhook-id header of every attempt and resend." }),
  endpointId: Schema.NullOr(Schema.String),
  url: Schema.String,
  type: EventType,
  taskId: Schema.NullOr(Schema.String).annotate({ description: "The task of a task event; null for a payment event." }),
  paymentId: Schema.NullOr(Schema.String).annotate({
    description: "The payment processor's payment id of a payment event; null for a task event."
  }),
  status: Schema.Literals(["pending", "delivered", "failed"]),
  occurredAt: Instant,
  nextAttemptAt: Schema.NullOr(Instant),
  attempts: Schema.Array(WebhookAttempt)
}).annotate({ identifier: "WebhookDelivery" })
export type WebhookDelivery = typeof WebhookDelivery.Type

export const WebhookDeliveryList = Schema.Struct({
  data: Schema.Array(WebhookDelivery).annotate({ description: "Newest first." }),
  nextCursor: Schema.NullOr(Schema.String).annotate({
    description: "Pass as `before` for the next (older) page; null at the end."
  })
}).annotate({ identifier: "WebhookDeliveryList" })

export const SigningSecret = Schema.Struct({
  secret: Schema.String.annotate({
    description: "Signs deliveries to the webhookUrl of single submissions (POST /api/v1/jobs); made on first use."
  })
}).annotate({ identifier: "WebhookSigningSecret" })

const endpointId = { id: Schema.String.annotate({ description: "The endpoint id (whep_<uuid>)." }) }
const notFound = [Errors.RequestNotFound, Errors.ApiUnavailable]

export const WebhooksApi = HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("create", "/api/v1/webhook-endpoints", {
      payload: CreateWebhookEndpoint,
      success: WebhookEndpointWithSecret.pipe(HttpApiSchema.status(201)),
      error: [Errors.InvalidRequest, Errors.ApiUnavailable]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Create a webhook endpoint",
          description: "Deliveries of the chosen task and payment events go to this URL, signed with the secret returned (once)."
        })
      )
      .annotateMerge(requireScope(SCOPE)),
    HttpApiEndpoint.get("list", "/api/v1/webhook-endpoints", {
      success: WebhookEndpointList,
      error: [Errors.ApiUnavailable]
    })
      .annotateMerge(OpenApi.annotations({ summary: "List webhook endpoints", description: "Oldest first." }))
      .annotateMerge(requireScope(SCOPE)),
    HttpApiEndpoint.get("get", "/api/v1/webhook-endpoints/:id", { params: endpointId, success: WebhookEndpoint, error: notFound })
      .annotateMerge(OpenApi.annotations({ summary: "Read a webhook endpoint" }))
      .annotateMerge(requireScope(SCOPE)),
    HttpApiEndpoint.patch("update", "/api/v1/webhook-endpoints/:id", {
      params: endpointId,
      payload: UpdateWebhookEndpoint,
      success: WebhookEndpoint,
      error: [Errors.InvalidRequest, ...notFound]
    })
      .annotateMerge(
        OpenApi.annotations({ summary: "Change a webhook endpoint", description: "Its URL, events, or whether it is enabled." })
      )
      .annotateMerge(requireScope(SCOPE)),
    HttpApiEndpoint.delete("delete", "/api/v1/webhook-endpoints/:id", {
      params: endpointId,
      success: HttpApiSchema.NoContent,
      error: notFound
    })
      .annotateMerge(OpenApi.annotations({ summary: "Delete a webhook endpoint", description: "With its delivery log." }))
      .annotateMerge(requireScope(SCOPE)),
    HttpApiEndpoint.post("rotateSecret", "/api/v1/webhook-endpoints/:id/rotate-secret", {
      params: endpointId,
      success: WebhookEndpointWithSecret,
      error: notFound
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Rotate an endpoint's secret",
          description:
            "Returns the new secret. Until previousSecretExpiresAt (24 hours) every delivery carries a signature by the " +
            "new and by the previous secret, so receivers can switch without losing one."
        })
      )
      .annotateMerge(requireScope(SCOPE)),
    HttpApiEndpoint.get("deliveries", "/api/v1/webhook-endpoints/:id/deliveries", {
      params: endpointId,
      query: {
        limit: Schema.optionalKey(PageSize),
        before: Schema.optionalKey(Schema.String.annotate({ description: "The nextCursor of the previous page." }))
      },
      success: WebhookDeliveryList,
      error: [Errors.InvalidRequest, ...notFound]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "An endpoint's delivery log",
          description: "Deliveries newest first with every attempt: status code, latency and the start of the answer."
        })
      )
      .annotateMerge(
        requireScope(
          SCOPE,
          parameterSchemas({ limit: PageSize }, { limit: { default: 100, description: "Deliveries per page, 1 to 100." } })
        )
      ),
    HttpApiEndpoint.post("resend", "/api/v1/webhook-deliveries/:id/resend", {
      params: { id: Schema.String.annotate({ description: "The delivery id (msg_<uuid>), its webhook-id." }) },
      success: WebhookDelivery.pipe(HttpApiSchema.status(202)),
      error: notFound
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Send a delivery again",
          description: "Queues the delivery again with the same webhook-id and a fresh retry schedule."
        })
      )
      .annotateMerge(requireScope(SCOPE)),
    HttpApiEndpoint.get("signingSecret", "/api/v1/webhook-signing-secret", {
      success: SigningSecret,
      error: [Errors.ApiUnavailable]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "The account's signing secret",
          description: "The secret that signs deliveries to the webhookUrl given with single submissions."
        })
      )
      .annotateMerge(requireScope(SCOPE))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Description, "Signed webhooks of task and payment events (Standard Webhooks).")
