/**
 * The provider interface, version 1, that an adapter for one upstream implements so the TaskWorker
 * can run tasks on it: submit, poll, fetch results, optional `lookup`, `cancel` and `callback` (the
 * job an upstream's callback names). Breaking changes add a ProviderV2 beside it. Failures are one
 * `ProviderError` reason the worker acts on alone:
 * RateLimited and Retryable retry the same step until the deadline, Terminal fails the task
 * (released), OutcomeUnknown makes it reconciliation_required.
 */
import type { Effect } from "effect"
import { Data } from "effect"
import type { ModelInput } from "../catalog/Catalog.ts"
import type { AssetType } from "../domain/Task.ts"

/** The name of the provider that generates results offline instead of running the model (Task.provider). */
export const SIMULATED = "simulated"

export type ProviderErrorReason = "RateLimited" | "Retryable" | "Terminal" | "OutcomeUnknown"

export class ProviderError extends Data.TaggedError("ProviderError")<{
  readonly reason: ProviderErrorReason
  readonly message: string
  /** For Terminal: the task's errorCode, e.g. UPSTREAM_REJECTED_INPUT. */
  readonly errorCode?: string | undefined
  /** For RateLimited: the upstream's Retry-After, when it gave one. */
  readonly retryAfterMs?: number | undefined
  readonly status?: number | undefined
  readonly cause?: unknown
}> {
  get isRetryable(): boolean {
    return this.reason === "RateLimited" || this.reason === "Retryable"
  }
}

/** One result item an upstream produced. Exactly one of `url`, `bytes`, `text` is set. */
export interface ProviderOutput {
  readonly type: AssetType
  /** The upstream's (expiring) download link; the worker copies the bytes into the blob store. */
  readonly url?: string | undefined
  readonly bytes?: Uint8Array | undefined
  readonly text?: string | undefined
  readonly contentType: string
  readonly metadata?: { readonly [key: string]: unknown } | undefined
}

export interface SubmitRequest {
  readonly model: string
  /** The validated, defaulted input; media references already turned into fetchable https URLs. */
  readonly input: ModelInput
  /**
   * Our task id. Adapters send it as the upstream's client reference or idempotency key, so
   * that a retry after a crash finds the earlier upstream job instead of starting a second one.
   */
  readonly reference: string
  /**
   * Our per-task callback URL (`CallbackUrls`), when callbacks are on: adapters whose upstream
   * calls back send it with the job, so that a callback names our task even when the submit's
   * answer was lost.
   */
  readonly callbackUrl?: string | undefined
}

export type SubmitResult =
  | { readonly _tag: "Accepted"; readonly upstreamId: string }
  | { readonly _tag: "Completed"; readonly upstreamId: string; readonly outputs: ReadonlyArray<ProviderOutput> }

export type PollResult =
  /** `progress`: how far the job is, a fraction 0-1, when the upstream says. */
  | { readonly _tag: "Pending"; readonly progress?: number | undefined }
  | { readonly _tag: "Succeeded"; readonly outputs: ReadonlyArray<ProviderOutput> }
  | { readonly _tag: "Failed"; readonly errorCode: string; readonly message: string }

/** A Pending poll's progress as a whole percent 0-100 (clamped); undefined when it said none, or nothing finite. */
export const percentOf = (progress: number | undefined): number | undefined =>
  progress === undefined || !Number.isFinite(progress) ? undefined : Math.round(Math.min(1, Math.max(0, progress)) * 100)

export interface ProviderV1 {
  readonly specificationVersion: "v1"
  /** A short name for logs and configuration, e.g. "alpha" or "simulated". */
  readonly provider: string
  /** The model slugs this adapter serves. */
  readonly models: ReadonlyArray<string>
  /** Upstream requests in flight at once for this adapter (the upstream's own rate limit). */
  readonly maxConcurrency?: number | undefined
  readonly submit: (request: SubmitRequest) => Effect.Effect<SubmitResult, ProviderError>
  readonly poll: (request: {
    readonly model: string
    readonly upstreamId: string
    readonly reference: string
  }) => Effect.Effect<PollResult, ProviderError>
  /**
   * Finds the upstream job submitted with this reference, for a task whose worker died after
   * sending it. Adapters whose upstream cannot search by reference leave it out, and such
   * tasks go to reconciliation_required instead of being sent twice.
   *
   * `undefined` is taken as proof that the upstream never accepted the task, and the worker
   * then sends it: an upstream whose search may lag behind its accepts must not implement
   * `lookup`, or must fail (Retryable) while it cannot be sure.
   */
  readonly lookup?:
    | ((request: {
        readonly model: string
        readonly reference: string
      }) => Effect.Effect<{ readonly upstreamId: string } | undefined, ProviderError>)
    | undefined
  readonly cancel?:
    | ((request: { readonly model: string; readonly upstreamId: string }) => Effect.Effect<void, ProviderError>)
    | undefined
  /**
   * The upstream job a callback body names (its id, as `submit` answers it), or undefined when
   * the body names none; left out by adapters whose upstream never calls back. The body is not
   * trusted for the outcome: the job is then polled.
   */
  readonly callback?:
    | ((request: {
        readonly model: string
        readonly input: ModelInput
        readonly body: unknown
      }) => Effect.Effect<string | undefined, ProviderError>)
    | undefined
}
