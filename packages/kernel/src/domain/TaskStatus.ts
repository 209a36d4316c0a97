/**
 * The task state machine, written once. Every store and worker asks `canTransition` before
 * it writes a status, and the credit effect of each target state is declared here too.
 *
 *   queued -> submitting -> running -> succeeded | failed | reconciliation_required
 *
 * Extra edges, and why:
 * - queued -> failed: a task that passes its deadline or whose model lost its executor
 *   before any worker sent it upstream.
 * - submitting -> succeeded | failed: upstreams that answer synchronously, or refuse at submit.
 * - submitting -> reconciliation_required: the request was sent but its outcome is unknown.
 * - reconciliation_required -> succeeded | failed: the reconciler or an operator settles it.
 *   The spec lists reconciliation_required as terminal for callers (they stop polling and keep
 *   the id); it is the one terminal state the service itself may still resolve.
 */
import { Schema } from "effect"

export const TaskStatus = Schema.Literals([
  "queued",
  "submitting",
  "running",
  "succeeded",
  "failed",
  "reconciliation_required"
])
export type TaskStatus = typeof TaskStatus.Type

export const transitions: { readonly [From in TaskStatus]: ReadonlyArray<TaskStatus> } = {
  queued: ["submitting", "failed"],
  submitting: ["running", "succeeded", "failed", "reconciliation_required"],
  running: ["succeeded", "failed", "reconciliation_required"],
  succeeded: [],
  failed: [],
  reconciliation_required: ["succeeded", "failed"]
}

export const canTransition = (from: TaskStatus, to: TaskStatus): boolean => transitions[from].includes(to)

/** Terminal for callers: polling can stop. */
export const isTerminal = (status: TaskStatus): boolean =>
  status === "succeeded" || status === "failed" || status === "reconciliation_required"

/** Unfinished tasks count against the per-account concurrency limit. */
export const isUnfinished = (status: TaskStatus): boolean => !isTerminal(status)

/** What entering a status does to the task's reservation. */
export type CreditEffect = "reserve" | "charge" | "release" | "hold"

export const creditEffectOf = (status: TaskStatus): CreditEffect => {
  switch (status) {
    case "queued":
      return "reserve"
    case "succeeded":
      return "charge"
    case "failed":
      return "release"
    default:
      return "hold"
  }
}
