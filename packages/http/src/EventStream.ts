/**
 * GET /api/v1/jobs/{id}/events on the wire (text/event-stream): each status the task reaches is
 * an `event: status` with data `{ id, status }`, and its terminal status is the final
 * `event: task` with data the whole task as GET /api/v1/jobs/{id} shows it, after which the
 * stream ends. While the task runs, each change of its progress is an `event: progress` with data
 * `{ id, progress }` (a whole percent) and no `id:` line, so the client's last event id stays its
 * last status. A status event's `id` is its sequence (kernel TaskEvents): a client resuming
 * with `Last-Event-ID: n` gets only the statuses numbered above n (and the current progress, if
 * it is still running); one that saw the final event
 * gets 204, which tells an EventSource to stop reconnecting. A comment line every
 * `heartbeatMs` keeps proxies from closing a quiet stream. Streams end when the server starts
 * shutting down (`Draining`), so that shutdown does not wait for them.
 */
import { Context, Effect, Stream } from "effect"
import { Sse } from "effect/encoding"
import type { StoreError, TaskStore } from "@taskmeter/kernel"
import { TaskEvents, TaskStatus, TaskView } from "@taskmeter/kernel"

export const CONTENT_TYPE = "text/event-stream"

export const LAST_EVENT_ID_HEADER = "last-event-id"

export interface Settings {
  /** SSE_HEARTBEAT_SECONDS, in milliseconds (default 15 s). */
  readonly heartbeatMs: number
}

export const Settings = Context.Reference<Settings>("@taskmeter/http/EventStream/Settings", {
  defaultValue: () => ({ heartbeatMs: 15_000 })
})

/**
 * Completes when the server starts shutting down: `Server.listen` provides it; a server built
 * otherwise ends its streams only with its scope.
 */
export const Draining = Context.Reference<Effect.Effect<void>>("@taskmeter/http/EventStream/Draining", {
  defaultValue: () => Effect.never
})

/** The sequence a client has seen: `Last-Event-ID` when it is one of ours, else 0 (from the start). */
export const lastSeen = (header: string | undefined): number => {
  const value = header === undefined ? Number.NaN : Number(header.trim())
  return Number.isInteger(value) && value >= 0 && value <= TaskEvents.LAST_SEQUENCE ? value : 0
}

/** Whether a client that has seen `after` has seen this task's final event already. */
export const finished = (task: TaskStore.TaskRecord, after: number): boolean =>
  TaskStatus.isTerminal(task.status) && TaskEvents.sequenceOf(task.status) <= after

const eventOf = (change: TaskEvents.Change | TaskEvents.Progress, now: Date): string =>
  Sse.encoder.write(
    change._tag === "Progress"
      ? { _tag: "Event", id: undefined, event: "progress", data: JSON.stringify({ id: change.id, progress: change.progress }) }
      : change._tag === "Ended"
        ? {
            _tag: "Event",
            id: String(TaskEvents.sequenceOf(TaskEvents.statusOf(change))),
            event: "task",
            data: JSON.stringify(TaskView.task(change.task, now))
          }
        : {
            _tag: "Event",
            id: String(TaskEvents.sequenceOf(TaskEvents.statusOf(change))),
            event: "status",
            data: JSON.stringify({ id: change.id, status: change.status })
          }
  )

const HEARTBEAT = ": heartbeat\n\n"

/**
 * The bytes of the stream: the events, heartbeats between them, ended by the last event, by
 * `draining`, or by a store failure (the client resumes with Last-Event-ID).
 */
export const encode = (
  events: Stream.Stream<TaskEvents.Change | TaskEvents.Progress, StoreError.StoreUnavailable>,
  options: { readonly heartbeatMs: number; readonly draining: Effect.Effect<void> }
): Stream.Stream<Uint8Array> => {
  const encoder = new TextEncoder()
  return Stream.mapEffect(events, (change) =>
    Effect.clockWith((clock) => Effect.succeed(eventOf(change, new Date(clock.currentTimeMillisUnsafe()))))
  ).pipe(
    Stream.merge(
      Stream.map(Stream.drop(Stream.tick(options.heartbeatMs), 1), () => HEARTBEAT),
      { haltStrategy: "left" }
    ),
    Stream.catch(() => Stream.empty),
    Stream.interruptWhen(options.draining),
    Stream.map((text) => encoder.encode(text))
  )
}
