/**
 * Following a task to its end. Under a session: one GET /api/v1/jobs/{id}, then its event
 * stream (GET /api/v1/jobs/{id}/events, an EventSource carrying the cookie): each `status`
 * event moves the task's status, each `progress` event sets its progress while running, the
 * final `task` event is the task as it ended. Under an API
 * key (an EventSource cannot send Authorization): GET /api/v1/jobs/{id} every POLL_MS.
 */
import { Schema } from "effect"
import { Task, TaskStatus } from "@taskmeter/kernel"
import { ApiFailure, call, currentCredential } from "./api.ts"

const TERMINAL = new Set(["succeeded", "failed", "reconciliation_required"])
const POLL_MS = 1500

export const isTerminal = (task: Task.Task): boolean => TERMINAL.has(task.status)

const decodeTask = Schema.decodeUnknownSync(Schema.fromJsonString(Task.Task))
const decodeStatus = Schema.decodeUnknownSync(Schema.fromJsonString(Schema.Struct({ status: TaskStatus.TaskStatus })))
const decodeProgress = Schema.decodeUnknownSync(Schema.fromJsonString(Schema.Struct({ progress: Task.Task.fields.progress })))

const get = (id: string) => call(({ api }) => api.jobs.get({ params: { id } }))

const poll = async (first: Task.Task, onUpdate: (task: Task.Task) => void, signal?: AbortSignal): Promise<Task.Task> => {
  let task = first
  while (!isTerminal(task) && signal?.aborted !== true) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
    task = await get(first.id)
    onUpdate(task)
  }
  return task
}

/**
 * The task's events until the final one. The EventSource reconnects by itself (with
 * Last-Event-ID) after a dropped connection; a refused one (closed) is reported by asking the
 * task again, whose answer says why (AUTH_REQUIRED, NOT_FOUND…).
 */
const stream = (first: Task.Task, onUpdate: (task: Task.Task) => void, signal?: AbortSignal): Promise<Task.Task> =>
  new Promise((resolve, reject) => {
    let task = first
    const source = new EventSource(`/api/v1/jobs/${encodeURIComponent(first.id)}/events`)
    const finish = (end: () => void) => {
      source.close()
      signal?.removeEventListener("abort", aborted)
      end()
    }
    const aborted = () => finish(() => resolve(task))
    signal?.addEventListener("abort", aborted)
    source.addEventListener("status", (event) => {
      // A new stream opens with the status the task is in, which the GET may have shown already.
      const { status } = decodeStatus(event.data)
      if (status === task.status) return
      const { progress: _, ...rest } = task
      task = { ...rest, status }
      onUpdate(task)
    })
    source.addEventListener("progress", (event) => {
      task = { ...task, ...decodeProgress(event.data) }
      onUpdate(task)
    })
    source.addEventListener("task", (event) => {
      task = decodeTask(event.data)
      onUpdate(task)
      finish(() => resolve(task))
    })
    source.addEventListener("error", () => {
      if (source.readyState !== EventSource.CLOSED) return
      finish(() =>
        get(first.id).then(
          () => reject(new ApiFailure("STREAM_CLOSED", "The task's event stream was refused; reload to try again.")),
          reject
        )
      )
    })
  })

/** Calls `onUpdate` with each state until the task is terminal (or `signal` aborts); returns the last. */
export const follow = async (id: string, onUpdate: (task: Task.Task) => void, signal?: AbortSignal): Promise<Task.Task> => {
  const task = await get(id)
  onUpdate(task)
  if (isTerminal(task) || signal?.aborted === true) return task
  return currentCredential()?.kind === "key" ? poll(task, onUpdate, signal) : stream(task, onUpdate, signal)
}

/** The charge the ledger holds for a task (its `charge` entry), if it has one yet. */
export const chargeOf = async (taskId: string): Promise<number | undefined> => {
  const usage = await call(({ api }) => api.usage.get({ query: { limit: 100 } }))
  return usage.entries.find((entry) => entry.kind === "charge" && entry.taskId === taskId)?.amountMicros
}
