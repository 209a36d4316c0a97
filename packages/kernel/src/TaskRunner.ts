/**
 * The TaskRunner service: admission of tasks and the caller's view of them.
 *
 * Admission validates the input (Catalog), quotes it (Pricer), compares expectedPriceMicros,
 * checks that the model has an executor and that referenced media belong to the caller, then
 * hands one atomic request to the TaskStore: idempotency, limits, reservation and insert happen
 * whole or not at all. Refusals before the store (validation, price) store nothing under the
 * Idempotency-Key, so the caller can fix the cause and retry with the same key.
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { Caller } from "./Accounts.ts"
import type * as Errors from "./Errors.ts"
import type { ResultId } from "./Ids.ts"
import type { StoreUnavailable } from "./StoreError.ts"
import type { TaskRecord } from "./TaskStore.ts"

export interface Submission {
  readonly model: string
  readonly input: unknown
  readonly expectedPriceMicros?: number | undefined
  readonly idempotencyKey: string
}

export interface Submitted {
  readonly task: TaskRecord
  readonly replayed: boolean
}

export type SubmitError =
  | Errors.ModelNotFound
  | Errors.InvalidModelInput
  | Errors.ModelPriceUnavailable
  | Errors.PriceChanged
  | Errors.ExecutionUnavailable
  | Errors.IdempotencyConflict
  | Errors.ApiKeyUsageExceeded
  | Errors.RateLimited
  | Errors.ConcurrencyLimited
  | Errors.PaymentReviewRequired
  | Errors.InsufficientCredits
  | StoreUnavailable

export class TaskRunner extends Context.Service<TaskRunner, {
  readonly submit: (caller: Caller, submission: Submission) => Effect.Effect<Submitted, SubmitError>
  /** JOB_NOT_FOUND for an unknown id and for another account's task alike. */
  readonly get: (caller: Caller, id: string) => Effect.Effect<TaskRecord, Errors.JobNotFound | StoreUnavailable>
  /** The caller's latest 100 tasks, newest first. */
  readonly list: (caller: Caller) => Effect.Effect<ReadonlyArray<TaskRecord>, StoreUnavailable>
}>()("@taskmeter/kernel/TaskRunner") {}

/** The spec's Asset.url for a stored result. */
export const resultUrl = (id: ResultId): string => `/api/v1/results/${id}`
