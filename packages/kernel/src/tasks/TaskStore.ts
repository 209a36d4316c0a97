/**
 * Storage port for tasks: admission (idempotency, limits, reservation and insert as one atomic
 * unit), reads scoped to the owning account, and the queue workers drain. Across processes: of
 * concurrent admissions with one (account, Idempotency-Key) exactly one inserts; reservations never
 * exceed available credits; a task has at most one live lease; `transition`/`transitionAll` are a
 * compare-and-set on (id, lease token, status) with the credit effect in the same unit, once.
 */
import { Context, Effect } from "effect"
import type { Scope } from "effect"
import type { AccountStore, Authenticated } from "../accounts/AccountStore.ts"
import type { ModelInput } from "../catalog/Catalog.ts"
import type { AccountId, ApiKeyId, ResultId, TaskId } from "../domain/Ids.ts"
import * as KeyCheck from "../accounts/KeyCheck.ts"
import type { Micros } from "../domain/Money.ts"
import type { Settlement } from "../pricing/PriceList.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import * as ErrorCode from "../domain/TaskErrorCode.ts"
import type { AssetType } from "../domain/Task.ts"
import type { TaskStatus } from "../domain/TaskStatus.ts"
import type { TaskWebhook } from "../webhooks/WebhookEvent.ts"

/** How the final charge follows from the reservation (see Pricer.settle). */
export type { Settlement }

export interface StoredAsset {
  readonly id: string
  readonly type: AssetType
  /** Set for file results, served at /api/v1/results/<resultId>. */
  readonly resultId?: ResultId | undefined
  /** Set for file results: when the file expires (ISO 8601, Retention); past it the asset has no url. */
  readonly expiresAt?: string | undefined
  /** Set for text results. */
  readonly text?: string | undefined
  readonly mimeType?: string | undefined
  /** Adapter facts worth keeping (dimensions, duration, `simulated: true`). */
  readonly metadata?: { readonly [key: string]: unknown } | undefined
}

export interface TaskRecord {
  readonly id: TaskId
  readonly accountId: AccountId
  readonly apiKeyId: ApiKeyId | null
  readonly model: string
  readonly input: ModelInput
  readonly status: TaskStatus
  readonly errorCode: string | null
  /** The quote fixed at admission, and the amount reserved. */
  readonly priceMicros: Micros
  readonly unitMicros: Micros
  readonly quantity: number
  readonly settlement: Settlement
  /** Set once when the task succeeds. */
  readonly chargedMicros: Micros | null
  readonly assets: ReadonlyArray<StoredAsset>
  /** The upstream's job id, once the upstream accepted the task. */
  readonly upstreamRef: string | null
  /** The provider adapter that took the task from the queue (e.g. "alpha", "simulated"); null while queued. */
  readonly provider: string | null
  /** How many times a worker claimed the task. */
  readonly attempts: number
  readonly createdAt: Date
  readonly updatedAt: Date
  /** Past this, a worker fails the task and releases its reservation. */
  readonly deadlineAt: Date
  /** The submitting request's W3C trace context (TraceContext), when it was traced. */
  readonly traceparent?: string | undefined
  /** When the owner asked to cancel a task already with a worker; the worker acts on it (see `cancel`). */
  readonly cancelRequestedAt: Date | null
  /** The upstream's latest progress report while running, a whole percent 0-100 (`noteProgress`); absent before one. */
  readonly progress?: number | undefined
}

export interface NewTask {
  readonly id: TaskId
  readonly accountId: AccountId
  readonly apiKeyId: ApiKeyId | null
  readonly model: string
  readonly input: ModelInput
  readonly priceMicros: Micros
  readonly unitMicros: Micros
  readonly quantity: number
  readonly settlement: Settlement
  readonly createdAt: Date
  readonly deadlineAt: Date
  /** Kept with the task when set (TaskRecord.traceparent). */
  readonly traceparent?: string | undefined
  /** The submission's own webhook, kept beside the task; its settling events are delivered there. */
  readonly webhook?: TaskWebhook | undefined
}

export interface AdmissionLimits {
  /** Submissions per account in the current one-minute window. */
  readonly submissionsPerMinute: number
  /** Tasks of the account in queued, submitting or running. */
  readonly maxUnfinishedTasks: number
  /** The submitting key's lifetime usage limit (null = unlimited); counted only on admission. */
  readonly keyUsageLimit: number | null
}

export interface AdmissionRequest {
  readonly task: NewTask
  readonly idempotencyKey: string
  /** Canonical hash of model, defaulted input and expectedPriceMicros. */
  readonly fingerprint: string
  /** When the Idempotency-Key stops protecting this submission. */
  readonly idempotencyExpiresAt: Date
  readonly limits: AdmissionLimits
}

/** Judged in the order of `AdmissionRules.inStore`; anything but Admitted writes nothing. */
export type AdmissionResult =
  | { readonly _tag: "Admitted"; readonly task: TaskRecord }
  | { readonly _tag: "Replayed"; readonly task: TaskRecord }
  | { readonly _tag: "IdempotencyConflict"; readonly taskId: TaskId }
  | { readonly _tag: "KeyUsageExceeded" }
  | { readonly _tag: "RateLimited"; readonly retryAfterSeconds: number }
  | { readonly _tag: "ConcurrencyLimited" }
  | { readonly _tag: "PaymentReviewRequired" }
  | { readonly _tag: "InsufficientCredits"; readonly availableMicros: number }

/**
 * An admission on behalf of whoever holds the key with `key.hash`: the store counts the request
 * in the key's window as `AccountStore.authenticate` does and, only if the key then passes
 * `KeyCheck.refusal`, admits the task under the key's account and id with the key's usage limit.
 */
export interface KeyedAdmissionRequest {
  readonly key: KeyCheck.KeyCheck
  readonly task: Omit<NewTask, "accountId" | "apiKeyId">
  readonly idempotencyKey: string
  readonly fingerprint: string
  readonly idempotencyExpiresAt: Date
  readonly limits: Omit<AdmissionLimits, "keyUsageLimit">
}

/** An admission by an authenticated caller (the task names its account), or by a presented key. */
export type AnyAdmissionRequest = AdmissionRequest | KeyedAdmissionRequest

/** What `admit` answers: an AdmissionResult for a caller's request, a KeyedAdmission for a key's. */
export type Admission<R extends AnyAdmissionRequest> = R extends KeyedAdmissionRequest ? KeyedAdmission : AdmissionResult

export const isKeyed = (request: AnyAdmissionRequest): request is KeyedAdmissionRequest => "key" in request

export interface KeyedAdmission {
  /** What `AccountStore.authenticate(key.hash, key.now)` would have answered. */
  readonly authenticated: Authenticated | undefined
  /** The admission's result; undefined when the key did not pass (then nothing but the count was written). */
  readonly admission: AdmissionResult | undefined
}

/** What a live Idempotency-Key names: the task it admitted and the fingerprint of that request. */
export interface IdempotentSubmission {
  readonly task: TaskRecord
  readonly fingerprint: string
}

export interface Claim {
  readonly task: TaskRecord
  readonly leaseToken: string
  readonly leaseExpiresAt: Date
}

export interface TransitionRequest {
  readonly taskId: TaskId
  readonly leaseToken: string
  /** The status the worker believes the task is in; the write happens only if it still is. */
  readonly from: TaskStatus
  readonly to: TaskStatus
  readonly now: Date
  readonly errorCode?: string | null | undefined
  readonly upstreamRef?: string | undefined
  /** Records the provider running the task (set on leaving queued). */
  readonly provider?: string | undefined
  /**
   * Into reconciliation_required: what the upstream last answered (or why no answer came), for the
   * operator queue; at most `MAX_UPSTREAM_ANSWER` characters are kept.
   */
  readonly upstreamAnswer?: string | undefined
  readonly assets?: ReadonlyArray<StoredAsset> | undefined
  /** Required when `to` is succeeded: the final charge, at most `priceMicros`; the rest is released. */
  readonly chargeMicros?: Micros | undefined
  /** Keep holding the lease after the write (true while work goes on, e.g. into running). */
  readonly keepLease: boolean
}

export type TransitionResult =
  | { readonly _tag: "Done"; readonly task: TaskRecord }
  | { readonly _tag: "LeaseLost" }
  | { readonly _tag: "IllegalTransition"; readonly from: TaskStatus; readonly to: TaskStatus }

/** One limit on upstream work: a provider's or a model's, shared by every process on the store. */
export interface SlotLane {
  /** e.g. `provider:alpha` or `model:alpha-image`. */
  readonly lane: string
  /** How many leases may hold a slot of the lane at once; a whole number of at least 1. */
  readonly limit: number
}

export interface SlotRequest {
  readonly taskId: TaskId
  readonly leaseToken: string
  readonly lanes: ReadonlyArray<SlotLane>
  readonly now: Date
}

/**
 * Settles a task without a lease: the reconciler's or an operator's decision on a
 * reconciliation_required task, or a verified callback's on one a worker may still hold (its
 * later write then finds the task moved on and drops it).
 */

export interface TaskListFilter {
  /** Only tasks after this one in the list's order (older); a task of the account, or nothing is listed. */
  readonly before?: TaskId | undefined
  readonly status?: TaskStatus | undefined
  readonly model?: string | undefined
  /** Only tasks created strictly after, and strictly before, these instants. */
  readonly createdAfter?: Date | undefined
  readonly createdBefore?: Date | undefined
}

/**
 * What `cancel` did: Canceled (the task is failed CANCELED, its reservation released: now, or by an
 * earlier cancel), Requested (a worker holds it past queued: the request is recorded and the worker
 * cancels upstream at its next poll), NotCancelable (it finished otherwise or awaits reconciliation).
 */
export type CancelResult =
  | { readonly _tag: "Canceled"; readonly task: TaskRecord }
  | { readonly _tag: "Requested"; readonly task: TaskRecord }
  | { readonly _tag: "NotCancelable"; readonly task: TaskRecord }

/** `cancel`'s answer for a task past submitting and running: Canceled only if a cancel ended it. */
export const finishedCancel = (task: TaskRecord): CancelResult =>
  task.status === "failed" && task.errorCode === ErrorCode.Canceled ? { _tag: "Canceled", task } : { _tag: "NotCancelable", task }

export interface Resolution {
  readonly taskId: TaskId
  /** The status the task must still be in; default reconciliation_required. */
  readonly from?: "reconciliation_required" | "submitting" | "running" | undefined
  readonly to: "succeeded" | "failed"
  readonly now: Date
  readonly chargeMicros?: Micros | undefined
  readonly assets?: ReadonlyArray<StoredAsset> | undefined
  readonly errorCode?: string | null | undefined
  /** The upstream job, when the resolution learned it (a callback named it). */
  readonly upstreamRef?: string | undefined
  /** Why (an operator's reason), kept as the note of the charge and release entries it writes. */
  readonly note?: string | undefined
}

/** The longest `upstreamAnswer` kept; longer ones are cut. */
export const MAX_UPSTREAM_ANSWER = 1000

/** A task in reconciliation_required as the operator queue shows it. */
export interface HeldTask {
  readonly task: TaskRecord
  /** What the upstream last answered before the task was held; null when nothing was recorded. */
  readonly upstreamAnswer: string | null
}

/** A request to run a housekeeping chore (`TaskStore.takeChore`). */
export interface ChoreTurn {
  readonly name: string
  readonly holder: string
  readonly now: Date
  readonly leaseMs: number
  readonly everyMs: number
}

export class TaskStore extends Context.Service<
  TaskStore,
  {
    /**
     * The one admission: a caller's, or a key's with its authentication in the same step (one
     * round trip for a store that can; a store may do it as `admitInSteps` does, with the same
     * answers).
     */
    readonly admit: <R extends AnyAdmissionRequest>(request: R) => Effect.Effect<Admission<R>, StoreUnavailable>
    /**
     * The submission a live Idempotency-Key of the account names (the task as it is now), or
     * undefined. Live by admit's rule: `idempotencyExpiresAt > now`. Reads only; for answering a
     * retry that can no longer be admitted (its price changed, its model was disabled) with the
     * task it already admitted rather than the refusal.
     */
    readonly findIdempotent: (
      accountId: AccountId,
      idempotencyKey: string,
      now: Date
    ) => Effect.Effect<IdempotentSubmission | undefined, StoreUnavailable>
    /**
     * Deletes up to `limit` Idempotency-Keys of any account whose `idempotencyExpiresAt <=
     * expiredBefore`, and answers how many it deleted (0 when `limit` is below 1). These are the
     * keys admit already treats as expired at `expiredBefore`; a key live then (a reused key
     * included, which its admission renewed) is never deleted. The tasks they named stay. Purges
     * running at once in several processes delete each key once and never wait for each other;
     * an admission reusing an expired key that a purge deletes meanwhile still records its key.
     */
    readonly purgeIdempotencyKeys: (expiredBefore: Date, limit: number) => Effect.Effect<number, StoreUnavailable>
    /**
     * Takes the housekeeping chore `name` for `holder` until `now + leaseMs`, and answers whether
     * it did: only when no other holder's lease is live at `now` and the chore was last taken at
     * least `everyMs` before `now` (or never). One holder at a time across every process.
     */
    readonly takeChore: (chore: ChoreTurn) => Effect.Effect<boolean, StoreUnavailable>
    /** Frees chore `name` if `holder` still holds it (its next turn still waits `everyMs` from its taking). */
    readonly freeChore: (chore: { readonly name: string; readonly holder: string }) => Effect.Effect<void, StoreUnavailable>
    /** The task, only if it belongs to the account. */
    readonly get: (accountId: AccountId, taskId: TaskId) => Effect.Effect<TaskRecord | undefined, StoreUnavailable>
    /**
     * The account's latest tasks, newest first (createdAt, then admission order), at most
     * `limit`, narrowed by `filter`; each a bounded index range (migration 0019).
     */
    readonly list: (
      accountId: AccountId,
      limit: number,
      filter?: TaskListFilter | undefined
    ) => Effect.Effect<ReadonlyArray<TaskRecord>, StoreUnavailable>
    /**
     * Leases up to `limit` tasks that need a worker: queued ones, and submitting or running ones
     * whose lease has lapsed (their worker died). Oldest first. Each claim increments `attempts`.
     */
    readonly claim: (options: {
      readonly workerId: string
      readonly limit: number
      readonly leaseMs: number
      readonly now: Date
      /** Only these models (a worker serves the models it has executors for). */
      readonly models?: ReadonlyArray<string> | undefined
    }) => Effect.Effect<ReadonlyArray<Claim>, StoreUnavailable>
    /**
     * Moves the end of a lease still held to `until`; false when it was lost. An `until` in the
     * past gives the lease up: the task is claimable at once (a worker stopping hands it on).
     */
    readonly renew: (taskId: TaskId, leaseToken: string, until: Date) => Effect.Effect<boolean, StoreUnavailable>
    readonly transition: (request: TransitionRequest) => Effect.Effect<TransitionResult, StoreUnavailable>
    /** Many transitions in one round trip; each is judged on its own, results in request order. */
    readonly transitionAll: (
      requests: ReadonlyArray<TransitionRequest>
    ) => Effect.Effect<ReadonlyArray<TransitionResult>, StoreUnavailable>
    /**
     * Tasks in `status` across all accounts, ordered by id, at most `limit` of them with an id
     * greater than `afterId` (keyset paging: pass the last id of one page to get the next).
     * For the reconciler and operators (reconciliation_required), never for callers.
     */
    readonly listByStatus: (
      status: TaskStatus,
      limit: number,
      afterId?: TaskId | undefined
    ) => Effect.Effect<ReadonlyArray<TaskRecord>, StoreUnavailable>
    /**
     * Takes one slot of every lane for the task's lease, or none (false): false too when the lease
     * is not live at `now`. A slot is held until `releaseSlots`, or until its lease stops being live
     * (lapsed, given up, or ended by a final move), so a dead worker's slots lapse with its lease.
     * Across processes, at most `limit` leases hold a slot of a lane at once. A lease taking again
     * keeps the slots it holds. Reads a bounded number of rows: the lanes' slots, not the queue.
     */
    readonly takeSlots: (request: SlotRequest) => Effect.Effect<boolean, StoreUnavailable>
    /** Frees the lanes' slots the lease holds (none is fine). */
    readonly releaseSlots: (request: {
      readonly taskId: TaskId
      readonly leaseToken: string
      readonly lanes: ReadonlyArray<string>
    }) => Effect.Effect<void, StoreUnavailable>
    /**
     * The operator queue: tasks in reconciliation_required across all accounts with their last
     * upstream answer, by id like `listByStatus` (keyset paging after `afterId`), at most `limit`.
     */
    readonly listHeld: (limit: number, afterId?: TaskId | undefined) => Effect.Effect<ReadonlyArray<HeldTask>, StoreUnavailable>
    /**
     * Records the upstream job of a task in submitting or reconciliation_required that has none yet
     * (a verified callback named it while the job still runs), so that whoever settles the task
     * next polls it rather than searching; true when written. No lease is needed or changed.
     */
    readonly noteUpstream: (taskId: TaskId, upstreamRef: string) => Effect.Effect<boolean, StoreUnavailable>
    /**
     * Records a running task's progress (a whole percent 0-100) and wakes its status watchers
     * without a status (they read it); true when written, false when the task is not running or
     * already shows that progress. No lease is needed or changed; `updatedAt` stays.
     */
    readonly noteProgress: (taskId: TaskId, progress: number) => Effect.Effect<boolean, StoreUnavailable>
    /**
     * The owner's cancel (undefined for a task of another account): a queued task moves to failed
     * CANCELED with its release at once, whoever leases it (that worker's next write loses its
     * compare-and-set); a submitting or running one keeps its first `cancelRequestedAt`.
     * Idempotent: a repeat answers as the first did, unless the task has since finished.
     */
    readonly cancel: (
      accountId: AccountId,
      taskId: TaskId,
      now: Date
    ) => Effect.Effect<CancelResult | undefined, StoreUnavailable>
    /** Only from `from` (reconciliation_required by default); undefined when the task is not in it. */
    readonly resolve: (resolution: Resolution) => Effect.Effect<TaskRecord | undefined, StoreUnavailable>
    /**
     * Watches one task for the scope's lifetime: the effect given completes when the task's
     * status may have changed (a write in this or, for a shared store, another process) after
     * the call or after the effect's previous completion, answering the status those writes
     * reached (the furthest along) when the store knows it, else undefined: read the task to know.
     * For `Prefer: wait` and the task's event stream.
     */
    readonly watchStatus: (taskId: TaskId) => Effect.Effect<Effect.Effect<TaskStatus | undefined>, never, Scope.Scope>
    /**
     * Holds one of the account's `limit` event-stream slots for the scope's lifetime, or answers
     * false at once when all are held. A shared store counts the streams of every process sharing
     * it: the process renews its slots while they are held, and the slots of a process that stops
     * renewing (it crashed) lapse after the store's lease. One round trip to take, one to give back.
     */
    readonly holdStream: (accountId: AccountId, limit: number) => Effect.Effect<boolean, StoreUnavailable, Scope.Scope>
    /**
     * Completes when a task may have become claimable (a wake-up from another process, or an
     * admission in this one), or after `maxWaitMs`, whichever comes first.
     */
    readonly awaitWork: (maxWaitMs: number) => Effect.Effect<void, StoreUnavailable>
  }
>()("@taskmeter/kernel/TaskStore") {}

/**
 * `admit` from a caller's admission: a key's request as two calls, the key's count, then, if it
 * passes, the admission under the key's account, id and usage limit.
 */
export const admitInSteps =
  (
    accounts: Pick<AccountStore["Service"], "authenticate">,
    admit: (request: AdmissionRequest) => Effect.Effect<AdmissionResult, StoreUnavailable>
  ): TaskStore["Service"]["admit"] =>
  <R extends AnyAdmissionRequest>(request: R): Effect.Effect<Admission<R>, StoreUnavailable> =>
    (isKeyed(request) ? admitWithKey(accounts, admit, request) : admit(request)) as Effect.Effect<Admission<R>, StoreUnavailable>

const admitWithKey = (
  accounts: Pick<AccountStore["Service"], "authenticate">,
  admit: (request: AdmissionRequest) => Effect.Effect<AdmissionResult, StoreUnavailable>,
  { key: check, ...request }: KeyedAdmissionRequest
): Effect.Effect<KeyedAdmission, StoreUnavailable> =>
  Effect.gen(function* () {
    const authenticated = yield* accounts.authenticate(check.hash, check.now)
    if (authenticated === undefined || KeyCheck.refusal(authenticated, check) !== undefined) {
      return { authenticated, admission: undefined }
    }
    const { key } = authenticated
    const admission = yield* admit({
      ...request,
      task: { ...request.task, accountId: key.accountId, apiKeyId: key.id },
      limits: { ...request.limits, keyUsageLimit: key.usageLimit }
    })
    return { authenticated, admission }
  })
