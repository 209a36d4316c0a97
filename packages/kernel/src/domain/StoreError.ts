/**
 * How a storage port fails besides its typed outcomes.
 * - StoreUnavailable (typed): the store could not be reached or did not answer, a fault of the
 *   moment; servers answer 503 (AUTH_UNAVAILABLE, API_UNAVAILABLE, EXECUTION_TEMPORARILY_UNAVAILABLE).
 * - StoreRefused (a defect, never typed): the store refused this one write for its data (a value
 *   it cannot hold, a broken constraint), and would refuse it again; servers answer 400 INVALID_REQUEST.
 */
import { Cause, Data } from "effect"

export class StoreUnavailable extends Data.TaggedError("StoreUnavailable")<{
  readonly message: string
  readonly cause?: unknown
}> {}

export class StoreRefused extends Data.TaggedError("StoreRefused")<{
  /** What the caller may be told: the refusal, without the statement. */
  readonly message: string
  /** The SQLSTATE or the store's own code, when it gave one. */
  readonly code?: string | undefined
  readonly cause?: unknown
}> {}

export const isStoreRefused = (u: unknown): u is StoreRefused => u instanceof StoreRefused

/** The StoreRefused a cause dies with, if any. */
export const refusalOf = (cause: Cause.Cause<unknown>): StoreRefused | undefined => {
  for (const reason of cause.reasons) {
    if (Cause.isDieReason(reason) && isStoreRefused(reason.defect)) return reason.defect
  }
  return undefined
}
