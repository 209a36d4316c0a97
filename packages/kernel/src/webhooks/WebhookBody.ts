/**
 * The body of a delivery: `{ type, timestamp, data }` as JSON text (signed as sent), `data` the
 * task as `GET /api/v1/jobs/{id}` showed it when the event happened.
 */
import * as TaskView from "../tasks/TaskView.ts"
import type { TaskRecord } from "../tasks/TaskStore.ts"
import type { EventType } from "./WebhookEvent.ts"

export const body = (type: EventType, occurredAt: Date, task: TaskRecord): string =>
  JSON.stringify({ type, timestamp: occurredAt.toISOString(), data: TaskView.task(task, occurredAt) })
