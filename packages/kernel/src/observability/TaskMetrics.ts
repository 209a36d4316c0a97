/**
 * The task metrics the worker and the reconciler record: a task's end (its duration from
 * admission by model and outcome, and the credits its status charged or released), and each
 * provider adapter call (count by family, step and result; duration; a span).
 */
import { Effect } from "effect"
import type { TaskRecord } from "../tasks/TaskStore.ts"
import * as Metrics from "./Metrics.ts"

/** Records a task that just reached `task.status` (succeeded, failed or reconciliation_required). */
export const ended = (task: TaskRecord): Effect.Effect<void> => {
  const charged = task.status === "succeeded" ? (task.chargedMicros ?? 0) : 0
  const released = task.status === "reconciliation_required" ? 0 : task.priceMicros - charged
  return Effect.all(
    [
      Metrics.observeSince(Metrics.taskDuration, { model: task.model, outcome: task.status }, task.createdAt.getTime()),
      Metrics.count(Metrics.creditsCharged, { kind: "task" }, charged),
      Metrics.count(Metrics.creditsReleased, { kind: "task" }, released)
    ],
    { discard: true }
  )
}

export type Step = "submit" | "poll" | "lookup" | "cancel"

/**
 * A provider adapter call, counted (result `ok`, or the ProviderError's reason), timed and traced
 * as `provider.<step>`.
 */
export const providerCall =
  (family: string, step: Step) =>
  <A, E extends { readonly reason: string }, R>(call: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    call.pipe(
      Effect.tap(() => Metrics.count(Metrics.providerCalls, { family, step, result: "ok" })),
      Effect.tapError((error) => Metrics.count(Metrics.providerCalls, { family, step, result: error.reason })),
      Metrics.timed(Metrics.providerCallDuration, { family, step }),
      Effect.withSpan(`provider.${step}`, { attributes: { "taskmeter.provider": family } })
    )
