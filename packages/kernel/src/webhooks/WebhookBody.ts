/**
 * The body of a delivery: `{ type, timestamp, data }` as JSON text (signed as sent). For a task
 * event `data` is the task as `GET /api/v1/jobs/{id}` showed it when the event happened; for a
 * payment event, the payment after it (PaymentWebhook.view).
 */
import * as PaymentWebhook from "../payments/PaymentWebhook.ts"
import * as TaskView from "../tasks/TaskView.ts"
import type { DeliveryClaim } from "./WebhookStore.ts"

const dataOf = (claim: DeliveryClaim) => {
  if (claim.task !== null) return TaskView.task(claim.task, claim.delivery.occurredAt)
  if (claim.payment !== null) return PaymentWebhook.view(claim.payment)
  return null
}

export const body = (claim: DeliveryClaim): string =>
  JSON.stringify({ type: claim.delivery.type, timestamp: claim.delivery.occurredAt.toISOString(), data: dataOf(claim) })
