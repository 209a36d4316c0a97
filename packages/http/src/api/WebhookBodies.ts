/**
 * What a webhook delivery carries, for the OpenAPI document's `webhooks` (OpenApiDocument): the
 * JSON body `{ type, timestamp, data }` of a task event (data: the task as GET /api/v1/jobs/{id}
 * shows it) and of a payment event (data: `PaymentWebhookData`, the kernel's PaymentWebhook.view),
 * and the Standard Webhooks headers every delivery is signed with.
 */
import { Schema } from "effect"
import { Task, WebhookEvent } from "@taskmeter/kernel"

const Instant = Schema.String.annotate({ format: "date-time" })

/** The `data` of a payment event's body. */
export const PaymentWebhookData = Schema.Struct({
  id: Schema.String.annotate({ description: "The payment processor's id of the payment (Stripe: the PaymentIntent)." }),
  processor: Schema.String.annotate({ description: "stripe" }),
  status: Schema.Literals(["succeeded", "partially_refunded", "refunded", "disputed"]).annotate({
    description: "After the event: disputed while an amount is held, else refunded once all of it is, partially before."
  }),
  currency: Schema.Literal("USD"),
  amountMicros: Schema.Int.annotate({ description: "What was paid and granted, USD micro-units." }),
  refundedMicros: Schema.Int.annotate({ description: "Refunded so far (a lost dispute not included)." }),
  heldMicros: Schema.Int.annotate({ description: "Held for disputes still open." }),
  createdAt: Instant,
  dispute: Schema.NullOr(
    Schema.Struct({
      id: Schema.String,
      amountMicros: Schema.Int,
      status: Schema.Literals(["open", "won", "lost"])
    })
  ).annotate({ description: "The dispute the event concerns; null for payment.succeeded and payment.refunded." }),
  ledgerEntryIds: Schema.Array(Schema.String).annotate({
    description: "The ledger entries the event made (GET /api/v1/usage lists them)."
  })
}).annotate({ identifier: "PaymentWebhookData" })

export const TaskWebhookBody = Schema.Struct({
  type: WebhookEvent.TaskEventType,
  timestamp: Instant.annotate({ description: "When the task entered the status." }),
  data: Task.Task
}).annotate({ identifier: "TaskWebhookBody" })

export const PaymentWebhookBody = Schema.Struct({
  type: WebhookEvent.PaymentEventType,
  timestamp: Instant.annotate({ description: "When the payment processor's event was applied." }),
  data: PaymentWebhookData
}).annotate({ identifier: "PaymentWebhookBody" })

/** What each event means, for its entry in the document's `webhooks`. */
export const meanings: { readonly [Type in WebhookEvent.EventType]: string } = {
  "task.running": "The task started running upstream. Delivered only to endpoints (and webhookEvents) that name it.",
  "task.succeeded": "The task succeeded; its charge is final.",
  "task.failed": "The task failed; its reservation was released.",
  "task.reconciliation_required": "The task's outcome is unknown and held for reconciliation.",
  "payment.succeeded": "A top-up was paid and its credits granted (once per payment).",
  "payment.refunded": "The payment's refunded total grew; the refund was taken from the credits.",
  "payment.disputed": "A dispute was opened on the payment; its amount is held.",
  "payment.dispute_closed": "A dispute closed: won releases the hold; lost releases it and refunds the amount."
}

export const SIGNATURE_HEADERS = {
  "webhook-id": "The delivery's id (msg_...), the same on every retry and resend: deduplicate by it.",
  "webhook-timestamp": "Unix seconds when this attempt was signed.",
  "webhook-signature":
    "v1,<base64 HMAC-SHA256> of `<webhook-id>.<webhook-timestamp>.<body>` with the endpoint's secret (or the " +
    "account's signing secret for a submission's webhookUrl), space-separated during a rotation's overlap."
} as const
