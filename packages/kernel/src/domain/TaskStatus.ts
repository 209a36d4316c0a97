/**
 * The task state machine, written once: `canTransition`, which every store and worker asks before
 * writing a status, and the credit effect of each target status. queued → submitting → running →
 * succeeded | failed | reconciliation_required, plus queued → failed (deadline, executor lost),
 * submitting → succeeded | failed | reconciliation_required, and reconciliation_required →
 * succeeded | failed (the one terminal status for callers that the service may still resolve).
 */
import { Schema } from "effect"

export const TaskStatus = Schema.Literals(["queued", "submitting", "running", "succeeded", "failed", "reconciliation_required"])
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
