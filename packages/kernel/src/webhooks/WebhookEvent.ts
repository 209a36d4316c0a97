/**
 * The events a webhook carries (only settling moves raise one) and a submission's own webhook.
 * Their body is `WebhookBody`.
 */
import { Schema } from "effect"
import type { TaskStatus } from "../domain/TaskStatus.ts"

export const EventType = Schema.Literals(["task.succeeded", "task.failed", "task.reconciliation_required"])
export type EventType = typeof EventType.Type

export const eventTypes: ReadonlyArray<EventType> = EventType.literals

/** The event a task entering `status` raises, if any. */
export const eventOf = (status: TaskStatus): EventType | undefined => {
  const type = `task.${status}`
  return eventTypes.find((known) => known === type)
}

/** A submission's own webhook, kept beside its task. */
export interface TaskWebhook {
  readonly url: string
  /** Only these events; all when null. */
  readonly events: ReadonlyArray<EventType> | null
}
