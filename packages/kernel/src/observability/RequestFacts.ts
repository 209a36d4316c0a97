/**
 * What the kernel learns about the request it serves, for that request's access line and span:
 * the account and the task, once known. The server provides a fresh `Facts` per request; without
 * one (a worker, a test) `note` only annotates the current span.
 */
import { Context, Effect } from "effect"

export interface Facts {
  accountId?: string | undefined
  taskId?: string | undefined
}

/** The current request's facts; undefined outside a request. */
export const CurrentFacts = Context.Reference<Facts | undefined>("@taskmeter/kernel/RequestFacts", {
  defaultValue: () => undefined
})

const SPAN_ATTRIBUTES = { accountId: "taskmeter.account_id", taskId: "taskmeter.task_id" } as const

/** Records the account and task ids the request concerns (never secrets). */
export const note = (facts: Facts): Effect.Effect<void> =>
  Effect.flatMap(Effect.service(CurrentFacts), (current) => {
    if (current !== undefined) {
      if (facts.accountId !== undefined) current.accountId = facts.accountId
      if (facts.taskId !== undefined) current.taskId = facts.taskId
    }
    const attributes: Record<string, string> = {}
    if (facts.accountId !== undefined) attributes[SPAN_ATTRIBUTES.accountId] = facts.accountId
    if (facts.taskId !== undefined) attributes[SPAN_ATTRIBUTES.taskId] = facts.taskId
    return Effect.annotateCurrentSpan(attributes)
  })
