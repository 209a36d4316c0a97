/** Following a task to its end: GET /api/v1/jobs/{id} every POLL_MS until it is terminal. */
import type { Task } from "@taskmeter/kernel"
import { call } from "./api.ts"

const TERMINAL = new Set(["succeeded", "failed", "reconciliation_required"])
const POLL_MS = 1500

export const isTerminal = (task: Task.Task): boolean => TERMINAL.has(task.status)

/** Calls `onUpdate` with each state until the task is terminal (or `signal` aborts); returns the last. */
export const follow = async (id: string, onUpdate: (task: Task.Task) => void, signal?: AbortSignal): Promise<Task.Task> => {
  for (;;) {
    const task = await call(({ api }) => api.jobs.get({ params: { id } }))
    onUpdate(task)
    if (isTerminal(task) || signal?.aborted === true) return task
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
  }
}

/** The charge the ledger holds for a task (its `charge` entry), if it has one yet. */
export const chargeOf = async (taskId: string): Promise<number | undefined> => {
  const usage = await call(({ api }) => api.usage.get({ query: { limit: 100 } }))
  return usage.entries.find((entry) => entry.kind === "charge" && entry.taskId === taskId)?.amountMicros
}
