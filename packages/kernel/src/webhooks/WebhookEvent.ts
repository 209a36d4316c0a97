/**
 * The events a webhook carries and a submission's own webhook. Task events: a task entered a
 * status (`task.running` only for those who subscribe to it; the others when a task settles).
 * Payment events: a processor's event that changed the account's credits (PaymentWebhook). An
 * endpoint made without a list of events gets `defaultEvents`. Their body is `WebhookBody`.
 */
import { Schema } from "effect"
import type { TaskStatus } from "../domain/TaskStatus.ts"

export const TaskEventType = Schema.Literals(["task.running", "task.succeeded", "task.failed", "task.reconciliation_required"])
export type TaskEventType = typeof TaskEventType.Type

export const PaymentEventType = Schema.Literals([
  "payment.succeeded",
  "payment.refunded",
  "payment.disputed",
  "payment.dispute_closed"
])
export type PaymentEventType = typeof PaymentEventType.Type

export const EventType = Schema.Literals([...TaskEventType.literals, ...PaymentEventType.literals])
export type EventType = typeof EventType.Type

export const eventTypes: ReadonlyArray<EventType> = EventType.literals

/** What an endpoint made without a list of events receives: the settling task events. */
export const defaultEvents: ReadonlyArray<EventType> = ["task.succeeded", "task.failed", "task.reconciliation_required"]

/** The event a task entering `status` raises, if any. */
export const eventOf = (status: TaskStatus): TaskEventType | undefined => {
  const type = `task.${status}`
  return TaskEventType.literals.find((known) => known === type)
}

/** A submission's own webhook, kept beside its task. */
export interface TaskWebhook {
  readonly url: string
  /** Only these events; the settling ones when null. */
  readonly events: ReadonlyArray<TaskEventType> | null
}
