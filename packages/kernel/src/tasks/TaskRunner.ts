/**
 * The TaskRunner service: admission of tasks and the caller's view of them. `submit` validates
 * and quotes a submission once, judges the rules of `AdmissionRules.order` before the store, and
 * hands one atomic admission to the TaskStore; a presented key is authenticated within it when
 * nothing before the store needs the account. Policy: docs/decisions.md, "Ledger and admission".
 */
import { Clock, Context, Duration, Effect, Layer, Metric, Redacted, Result } from "effect"
import type { Scope, Stream } from "effect"
import { Accounts, insufficientScope } from "../accounts/Accounts.ts"
import type { AuthenticationError, Caller } from "../accounts/Accounts.ts"
import { BudgetStore, secondsToNextDay, utcDay } from "../pricing/BudgetStore.ts"
import type { Share } from "../pricing/BudgetStore.ts"
import { Catalog } from "../catalog/Catalog.ts"
import type { Category, ModelDefinition, ModelInput } from "../catalog/Catalog.ts"
import * as Errors from "../domain/Errors.ts"
import * as Fingerprint from "../domain/Fingerprint.ts"
import * as Ids from "../domain/Ids.ts"
import type { ResultId, TaskId } from "../domain/Ids.ts"
import type { MediaReference } from "../media/MediaReference.ts"
import { MediaStore } from "../media/MediaStore.ts"
import * as Money from "../domain/Money.ts"
import { Pricer } from "../pricing/Pricer.ts"
import type { Quote } from "../pricing/Pricer.ts"
import * as Metrics from "../observability/Metrics.ts"
import * as ProblemList from "../domain/ProblemList.ts"
import * as RequestFacts from "../observability/RequestFacts.ts"
import * as TraceContext from "../observability/TraceContext.ts"
import { isStoreRefused } from "../domain/StoreError.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import { isTerminal } from "../domain/TaskStatus.ts"
import * as Slots from "./Slots.ts"
import * as TaskEvents from "./TaskEvents.ts"
import { TaskStore } from "./TaskStore.ts"
import type { AdmissionResult, TaskListFilter, TaskRecord } from "./TaskStore.ts"
import type { TaskWebhook } from "../webhooks/WebhookEvent.ts"

export interface Submission {
  readonly model: string
  readonly input: unknown
  readonly expectedPriceMicros?: number | undefined
  readonly idempotencyKey: string
  /**
   * The submission's own webhook, its URL already judged by `WebhookEndpoints.urlRefusal`; kept
   * beside the task (not part of the fingerprint).
   */
  readonly webhook?: TaskWebhook | undefined
}

export interface Submitted {
  readonly task: TaskRecord
  readonly replayed: boolean
}

/** A key as a request presented it, not yet authenticated: `submit` authenticates it. */
export interface PresentedKey {
  readonly _tag: "PresentedKey"
  readonly secret: Redacted.Redacted<string>
}

export const presentedKey = (secret: Redacted.Redacted<string>): PresentedKey => ({ _tag: "PresentedKey", secret })

/** Who submits: an authenticated caller, or a presented key. */
export type Submitter = Caller | PresentedKey

export const isPresentedKey = (who: Submitter): who is PresentedKey => "_tag" in who

/** What a presented key may be refused with: authenticate's answers, then INSUFFICIENT_SCOPE. */
export type KeyError = AuthenticationError | Errors.InsufficientScope

export type SubmitError =
  | Errors.ModelNotFound
  | Errors.InvalidModelInput
  | Errors.MediaExpired
  | Errors.InvalidRequest
  | Errors.ModelPriceUnavailable
  | Errors.PriceChanged
  | Errors.ExecutionUnavailable
  | Errors.IdempotencyConflict
  | Errors.ApiKeyUsageExceeded
  | Errors.RateLimited
  | Errors.ConcurrencyLimited
  | Errors.PaymentReviewRequired
  | Errors.InsufficientCredits
  | Errors.PlatformBudgetExceeded
  | Errors.ExecutionTemporarilyUnavailable

export interface ListQuery extends Omit<TaskListFilter, "before"> {
  /** 1 to 100; default 100. */
  readonly limit?: number | undefined
  /** The `nextCursor` of the previous page. */
  readonly before?: string | undefined
}

export interface TaskPage {
  readonly tasks: ReadonlyArray<TaskRecord>
  /** Pass as `before` for the next (older) page; null at the end. */
  readonly nextCursor: string | null
}

export interface Awaited {
  readonly task: TaskRecord
  readonly waited: boolean
}

export interface Canceled {
  readonly task: TaskRecord
  readonly pending: boolean
}

export class TaskRunner extends Context.Service<
  TaskRunner,
  {
    /**
     * A presented key needs the `jobs:create` scope, and its refusal comes first. It is
     * authenticated within the admission (one store call) unless something before the store
     * needs the account (a refusal that a replay may answer, media references, a daily budget):
     * then first, where an outage is AUTH_UNAVAILABLE. An outage in the admission, which may have
     * admitted the task, is EXECUTION_TEMPORARILY_UNAVAILABLE.
     */
    readonly submit: <W extends Submitter>(
      who: W,
      submission: Submission
    ) => Effect.Effect<Submitted, SubmitError | (W extends PresentedKey ? KeyError : never)>
    /** JOB_NOT_FOUND for an unknown id and for another account's task alike. */
    readonly get: (caller: Caller, id: string) => Effect.Effect<TaskRecord, Errors.JobNotFound | StoreUnavailable>
    /**
     * A page of the caller's tasks, newest first (default: the latest 100), with the cursor of
     * the next, older, page. A `before` that names no task of the caller is JOB_NOT_FOUND.
     */
    readonly list: (caller: Caller, query?: ListQuery) => Effect.Effect<TaskPage, Errors.JobNotFound | StoreUnavailable>
    /**
     * The owner's cancel (rules: TaskStore.cancel): the task, and `pending` while its worker still
     * has to cancel it upstream. A finished task is TASK_NOT_CANCELABLE, unless a cancel ended it.
     */
    readonly cancel: (
      caller: Caller,
      id: string
    ) => Effect.Effect<Canceled, Errors.JobNotFound | Errors.TaskNotCancelable | StoreUnavailable>
    /**
     * `task` (the caller's) once it is terminal, or as it stands after `maxWaitMs` (Prefer: wait),
     * woken by the store (TaskStore.watchStatus), never a poll. At most `maxWaitsPerAccount`
     * waits of one account, and `maxWaits` in all, at once in this process; past either it
     * answers at once, `waited: false`.
     */
    readonly awaitTask: (task: TaskRecord, maxWaitMs: number) => Effect.Effect<Awaited, StoreUnavailable>
    /**
     * `task` (the caller's) at each status numbered above `after` (TaskEvents), with its progress
     * changes while running, ending with its terminal status. The scope holds one of the account's
     * `maxStreamsPerAccount` stream slots in the store (TaskStore.holdStream: across the processes
     * sharing it); past them CONCURRENCY_LIMITED.
     */
    readonly follow: (
      task: TaskRecord,
      after: number
    ) => Effect.Effect<
      Stream.Stream<TaskEvents.Change | TaskEvents.Progress, StoreUnavailable>,
      Errors.ConcurrencyLimited | StoreUnavailable,
      Scope.Scope
    >
  }
>()("@taskmeter/kernel/TaskRunner") {}

/** The spec's Asset.url for a stored result. */
export const resultUrl = (id: ResultId): string => `/api/v1/results/${id}`

export interface Options {
  /** Admitted submissions per account per one-minute window (default 60). */
  readonly submissionsPerMinute?: number | undefined
  /** Tasks of an account in queued, submitting or running at once (default 10). */
  readonly maxUnfinishedTasks?: number | undefined
  /** How long an Idempotency-Key protects its submission (default 24 hours, as Stripe keeps keys). */
  readonly idempotencyTtl?: Duration.Input | undefined
  /** How long a task may take, from admission, by model category (defaults: `defaultDeadlines`). */
  readonly deadlines?: Partial<{ readonly [C in Category]: Duration.Input }> | undefined
  /** Per model, replacing its category's deadline (MODEL_DEADLINE_SECONDS). */
  readonly modelDeadlines?: { readonly [model: string]: Duration.Input } | undefined
  /** Whether a worker can run the model now; submissions of other models are EXECUTION_UNAVAILABLE. */
  readonly executorAvailable: (model: string) => boolean
  /** `awaitTask` calls of one account under way at once in this process (default 10). */
  readonly maxWaitsPerAccount?: number | undefined
  /** `awaitTask` calls under way at once in this process, all accounts together (default 1000). */
  readonly maxWaits?: number | undefined
  /** `follow` streams of one account open at once, in every process sharing the store (default 100). */
  readonly maxStreamsPerAccount?: number | undefined
}

/** Video and music take minutes upstream; the deadlines leave room for queueing and retries. */
export const defaultDeadlines: { readonly [C in Category]: Duration.Input } = {
  image: "15 minutes",
  video: "60 minutes",
  audio: "30 minutes",
  text: "10 minutes"
}

const DEFAULT_WAITS_PER_ACCOUNT = 10
const DEFAULT_WAITS = 1000
const DEFAULT_STREAMS_PER_ACCOUNT = 100

/** A refused stream may retry after this long: about one polling interval. */
const STREAM_RETRY_SECONDS = 5

/** An EXECUTION_TEMPORARILY_UNAVAILABLE caller may retry after this long: a store fail-over or restart. */
const ADMISSION_RETRY_SECONDS = 1

/** A CONCURRENCY_LIMITED caller may retry after this long: about one polling interval. */
const CONCURRENCY_RETRY_SECONDS = 5

const LIST_LIMIT = 100

/** A submission validated once: its model, defaulted input and fingerprint. */
interface Prepared {
  readonly model: ModelDefinition
  readonly input: ModelInput
  readonly fingerprint: string
  readonly submission: Submission
}

/** The scope `submit` asks of a presented key. */
const SUBMIT_SCOPE = "jobs:create"

/** Where in the input a media reference sits, as `input.<field>` or `input.<field>[i]`. */
const pathOfReference = (input: ModelInput, reference: MediaReference): string => {
  for (const [field, value] of Object.entries(input)) {
    if (value === reference) return `input.${field}`
    if (Array.isArray(value)) {
      const index = value.indexOf(reference)
      if (index >= 0) return `input.${field}[${index}]`
    }
  }
  return "input"
}

/**
 * A store failure while admitting: the task may or may not have been written, and only the
 * store can tell. The spec's answer for it tells the caller to retry with the same
 * Idempotency-Key, which replays a task that was admitted and admits one that was not, so
 * nothing is lost and nothing is reserved twice.
 */
const admissionUnavailable = (error: StoreUnavailable) =>
  Effect.andThen(
    Effect.logWarning("A submission failed on the task store", error.message),
    Effect.fail(
      new Errors.ExecutionTemporarilyUnavailable({
        message:
          "The task could not be admitted just now and may or may not have been; retry with the same " +
          "Idempotency-Key: a task that was admitted is answered again, never admitted or reserved twice.",
        retryAfterSeconds: ADMISSION_RETRY_SECONDS
      })
    )
  )

/**
 * The store refused the admission for its data (StoreRefused: a value validation let through):
 * nothing was admitted, and the same request would be refused again, so the answer is 400,
 * never "retry". Only that submission fails: a batch the store refuses is rerun one by one.
 */
const refusedByStore = (defect: unknown) =>
  isStoreRefused(defect)
    ? Effect.andThen(
        Effect.logError("The task store refused a submission's data", defect),
        Effect.fail(
          new Errors.InvalidRequest({
            message:
              `The request's data could not be stored: ${defect.message}. Nothing was admitted or reserved; ` +
              "change the data and send it again."
          })
        )
      )
    : Effect.die(defect)

const idempotencyConflict = (taskId: TaskId) =>
  new Errors.IdempotencyConflict({
    message:
      `This Idempotency-Key was already used for a different request (task ${taskId}); ` + "send a new key for a new request."
  })

const refused = (
  result: Exclude<AdmissionResult, { _tag: "Admitted" | "Replayed" }>,
  context: {
    readonly caller: Caller
    readonly priceMicros: number
    readonly options: Required<Pick<Options, "submissionsPerMinute" | "maxUnfinishedTasks">>
  }
) => {
  switch (result._tag) {
    case "IdempotencyConflict":
      return idempotencyConflict(result.taskId)
    case "KeyUsageExceeded":
      return new Errors.ApiKeyUsageExceeded({
        message: `This API key reached its usage limit of ${context.caller.keyUsageLimit} submissions; create a new key.`
      })
    case "RateLimited":
      return new Errors.RateLimited({
        message:
          `At most ${context.options.submissionsPerMinute} tasks may be submitted per minute; ` +
          `retry in ${result.retryAfterSeconds} s.`,
        retryAfterSeconds: result.retryAfterSeconds
      })
    case "ConcurrencyLimited":
      return new Errors.ConcurrencyLimited({
        message:
          `At most ${context.options.maxUnfinishedTasks} tasks may be unfinished at once; ` + "wait for one to finish and retry.",
        retryAfterSeconds: CONCURRENCY_RETRY_SECONDS
      })
    case "PaymentReviewRequired":
      return new Errors.PaymentReviewRequired({
        message:
          "A payment refund left the account's balance uncovered; tasks can be submitted again once " + "added credits cover it."
      })
    case "InsufficientCredits":
      return new Errors.InsufficientCredits({
        message:
          `Available credits are ${result.availableMicros} micros (${Money.formatUsd(result.availableMicros)} USD), ` +
          `the task needs ${context.priceMicros} micros (${Money.formatUsd(context.priceMicros)} USD); add credits and retry.`,
        requiredMicros: context.priceMicros,
        availableMicros: result.availableMicros
      })
  }
}

const budgetExceeded = (model: string, now: number) =>
  new Errors.PlatformBudgetExceeded({
    message:
      `Model ${model} is unavailable until 00:00 UTC: the platform's daily budget for it is spent. ` +
      "Nothing was reserved; retry after midnight UTC or choose another model.",
    retryAfterSeconds: secondsToNextDay(now),
    model
  })

export const make = (
  options: Options
): Effect.Effect<TaskRunner["Service"], never, Catalog | Pricer | TaskStore | MediaStore | BudgetStore | Accounts> =>
  Effect.gen(function* () {
    const accounts = yield* Accounts
    const catalog = yield* Catalog
    const pricer = yield* Pricer
    const tasks = yield* TaskStore
    const media = yield* MediaStore
    const budgets = yield* BudgetStore
    const limits = {
      submissionsPerMinute: options.submissionsPerMinute ?? 60,
      maxUnfinishedTasks: options.maxUnfinishedTasks ?? 10
    }
    const idempotencyTtlMs = Duration.toMillis(options.idempotencyTtl ?? "24 hours")
    const deadlineMs = (model: ModelDefinition) =>
      Duration.toMillis(
        options.modelDeadlines?.[model.slug] ?? options.deadlines?.[model.category] ?? defaultDeadlines[model.category]
      )

    const ownsMedia = Effect.fnUntraced(function* (caller: Caller, model: ModelDefinition, input: ModelInput) {
      const references = catalog.mediaReferences(model, input)
      if (references.length === 0) return
      const now = new Date(yield* Clock.currentTimeMillis)
      const { expired, missing } = yield* media.missingMedia(caller.accountId, references, now)
      if (missing.length === 0 && expired.length > 0) {
        return yield* new Errors.MediaExpired({
          message: ProblemList.join(
            expired.map(
              (reference) =>
                `${pathOfReference(input, reference)}: ${reference} expired under the account's retention and its file ` +
                "was removed; upload the file again and send the new media reference"
            )
          )
        })
      }
      if (missing.length === 0) return
      // A reference of another account reads exactly like one that does not exist.
      const problems = missing.map(
        (reference) =>
          `${pathOfReference(input, reference)}: ${reference} is not a media file of this account; ` +
          "upload the file and send the media reference its upload returns"
      )
      return yield* new Errors.InvalidModelInput({
        message: ProblemList.join(problems),
        model: model.slug,
        problems: ProblemList.listed(problems)
      })
    })

    /** The checks between validation and the store that need no account: the quote, or why not. */
    const priced = Effect.fnUntraced(function* (
      model: ModelDefinition,
      input: ModelInput,
      expectedPriceMicros: number | undefined
    ) {
      const quote = yield* pricer.quote(model.slug, input)
      yield* pricer.checkExpected(quote, expectedPriceMicros)
      if (!options.executorAvailable(model.slug)) {
        return yield* new Errors.ExecutionUnavailable({
          message:
            `Execution is not configured for ${model.slug} at present; nothing was reserved. ` +
            "Try again later or choose another model."
        })
      }
      return quote
    })

    /** The task's share of its model's daily budget, taken; undefined when the model has no budget. */
    const takeBudget = Effect.fnUntraced(function* (quote: Quote) {
      const limitMicros = yield* pricer.budgetOf(quote.model)
      if (limitMicros === undefined) return undefined
      const now = yield* Clock.currentTimeMillis
      const share: Share = { model: quote.model, day: utcDay(now), amountMicros: quote.priceMicros }
      if (yield* budgets.take({ ...share, limitMicros })) return share
      return yield* budgetExceeded(quote.model, now)
    })

    /** A share the admission did not use; failing to return it only leaves the day's total high. */
    const giveBack = (share: Share) =>
      budgets
        .giveBack(share)
        .pipe(
          Effect.catchTag("StoreUnavailable", (error) =>
            Effect.logWarning(`Could not give back ${share.amountMicros} micros of ${share.model}'s daily budget`, error.message)
          )
        )

    /** A refused submission may retry one the key already admitted: then the answer is that task. */
    const replayOr = Effect.fnUntraced(function* <E>(caller: Caller, idempotencyKey: string, fingerprint: string, refusal: E) {
      const now = yield* Clock.currentTimeMillis
      const earlier = yield* tasks.findIdempotent(caller.accountId, idempotencyKey, new Date(now))
      if (earlier === undefined) return yield* Effect.fail(refusal)
      if (earlier.fingerprint !== fingerprint) return yield* idempotencyConflict(earlier.task.id)
      return { task: earlier.task, replayed: true }
    })

    /** The store's answer as the submission's: the task, or the refusal. */
    const answer = (result: AdmissionResult, caller: Caller, priceMicros: number) => {
      switch (result._tag) {
        case "Admitted":
          return Effect.succeed({ task: result.task, replayed: false })
        case "Replayed":
          return Effect.succeed({ task: result.task, replayed: true })
        default:
          return Effect.fail(refused(result, { caller, priceMicros, options: limits }))
      }
    }

    /** What admission writes, but for whose account: the caller's or the key's. */
    const admissionOf = ({ fingerprint, input, model, submission }: Prepared, quote: Quote) =>
      Effect.zipWith(Clock.currentTimeMillis, TraceContext.current, (now, traceparent) => ({
        task: {
          ...(traceparent === undefined ? {} : { traceparent }),
          ...(submission.webhook === undefined ? {} : { webhook: submission.webhook }),
          id: Ids.makeTaskId(),
          model: model.slug,
          input,
          priceMicros: quote.priceMicros,
          unitMicros: quote.unitMicros,
          quantity: quote.quantity,
          settlement: quote.settlement,
          createdAt: new Date(now),
          deadlineAt: new Date(now + deadlineMs(model))
        },
        idempotencyKey: submission.idempotencyKey,
        fingerprint,
        idempotencyExpiresAt: new Date(now + idempotencyTtlMs),
        limits
      }))

    /** The presented key's caller, if it has the scope to submit. */
    const authenticated = (key: PresentedKey) =>
      Effect.flatMap(accounts.authenticate(Redacted.value(key.secret)), (caller) =>
        caller.scopes.includes(SUBMIT_SCOPE) ? Effect.succeed(caller) : Effect.fail(insufficientScope(SUBMIT_SCOPE))
      )

    /** The admission by an authenticated caller: the checks that need its account, then the store. */
    const admitAsCaller = Effect.fnUntraced(
      function* (caller: Caller, prepared: Prepared, quoted: Result.Result<Quote, Effect.Error<ReturnType<typeof priced>>>) {
        const { model, input, submission } = prepared
        const checked = yield* Effect.result(
          Effect.fromResult(quoted).pipe(
            Effect.tap(() => ownsMedia(caller, model, input)),
            Effect.flatMap((quote) => Effect.map(takeBudget(quote), (share) => ({ quote, share })))
          )
        )
        if (Result.isFailure(checked)) {
          return checked.failure._tag === "StoreUnavailable"
            ? yield* checked.failure
            : yield* replayOr(caller, submission.idempotencyKey, prepared.fingerprint, checked.failure)
        }
        const { quote, share } = checked.success
        const admission = yield* admissionOf(prepared, quote)
        // A failure here keeps the share: the task may have been admitted. A refusal did not admit it.
        const result = yield* tasks
          .admit({
            ...admission,
            task: { ...admission.task, accountId: caller.accountId, apiKeyId: caller.apiKeyId },
            limits: { ...limits, keyUsageLimit: caller.keyUsageLimit }
          })
          .pipe(
            Effect.withSpan("TaskStore.admit"),
            Effect.catchDefect((defect) =>
              Effect.andThen(
                share !== undefined && isStoreRefused(defect) ? giveBack(share) : Effect.void,
                refusedByStore(defect)
              )
            )
          )
        if (share !== undefined && result._tag !== "Admitted") yield* giveBack(share)
        return yield* answer(result, caller, quote.priceMicros)
      },
      Effect.catchTag("StoreUnavailable", admissionUnavailable)
    )

    /** Authentication and admission in one store call, the key's refusal first. */
    const admitWithKey = Effect.fnUntraced(function* (key: PresentedKey, prepared: Prepared, quote: Quote) {
      const admission = yield* admissionOf(prepared, quote)
      const { caller, result } = yield* accounts
        .authenticateWithin(Redacted.value(key.secret), SUBMIT_SCOPE, (check) =>
          tasks.admit({ ...admission, key: check }).pipe(
            Effect.withSpan("TaskStore.admit"),
            Effect.map(({ admission, authenticated }) => [authenticated, admission] as const),
            Effect.catchTag("StoreUnavailable", admissionUnavailable),
            Effect.catchDefect(refusedByStore)
          )
        )
        .pipe(
          // The refused statement judged no key, and a refused key comes before every other answer.
          Effect.catchTag("InvalidRequest", (refusal) => Effect.andThen(authenticated(key), Effect.fail(refusal)))
        )
      if (result === undefined) return yield* Effect.die("the store refused a key that passes its check")
      return yield* answer(result, caller, quote.priceMicros)
    })

    const submit = Effect.fnUntraced(function* (who: Submitter, submission: Submission) {
      const validated = yield* Effect.result(catalog.validate(submission.model, submission.input))
      if (Result.isFailure(validated)) {
        // A key's refusal comes before the submission's own.
        if (isPresentedKey(who)) yield* authenticated(who)
        return yield* validated.failure
      }
      const { model, input } = validated.success
      const fingerprint = Fingerprint.of({ model: model.slug, input, expectedPriceMicros: submission.expectedPriceMicros })
      const prepared: Prepared = { model, input, fingerprint, submission }
      const quoted = yield* Effect.result(priced(model, input, submission.expectedPriceMicros))
      if (!isPresentedKey(who)) return yield* admitAsCaller(who, prepared, quoted)
      // A budget is taken only once the key is judged: one call would take it for any key.
      const needsAccount =
        Result.isFailure(quoted) ||
        catalog.mediaReferences(model, input).length > 0 ||
        (yield* pricer.budgetOf(model.slug)) !== undefined
      if (!needsAccount) return yield* admitWithKey(who, prepared, quoted.success)
      return yield* admitAsCaller(yield* authenticated(who), prepared, quoted)
    })

    const jobNotFound = (id: string) =>
      new Errors.JobNotFound({ message: `No task with id ${JSON.stringify(id)} belongs to this account.` })

    // The series every admission updates, made once.
    const admittedCount = Metric.withAttributes(Metrics.admissions, { outcome: "admitted" })
    const reservedCount = Metric.withAttributes(Metrics.creditsReserved, { kind: "task" })

    /** `submit`, counted by outcome (admitted, replayed, the refusal's code), noted for the request's log and traced. */
    const observed = (who: Submitter, submission: Submission) =>
      submit(who, submission).pipe(
        Effect.tap(({ task, replayed }) =>
          Effect.andThen(
            replayed
              ? Metrics.count(Metrics.admissions, { outcome: "replayed" })
              : Effect.andThen(Metric.update(admittedCount, 1), Metric.update(reservedCount, task.priceMicros)),
            RequestFacts.note({ accountId: task.accountId, taskId: task.id })
          )
        ),
        Effect.tapError((error) => Metrics.count(Metrics.admissions, { outcome: error.code })),
        Effect.withSpan("TaskRunner.submit")
      )

    const waits = Slots.make(options.maxWaitsPerAccount ?? DEFAULT_WAITS_PER_ACCOUNT, options.maxWaits ?? DEFAULT_WAITS)
    const holdWait = waits.hold
    const maxStreams = options.maxStreamsPerAccount ?? DEFAULT_STREAMS_PER_ACCOUNT
    const readEnded = TaskEvents.sharedReads((task) => tasks.get(task.accountId, task.id))

    /** Holds a wait slot of the account, then watches the task until it ends or `maxWaitMs` passes. */
    const waitFor = Effect.fnUntraced(function* (task: TaskRecord, maxWaitMs: number) {
      if (!(yield* holdWait(task.accountId))) return { task, waited: false }
      // Watching before reading again: a task that ends in between still wakes us.
      const settled = yield* tasks.watchStatus(task.id)
      const until = (yield* Clock.currentTimeMillis) + maxWaitMs
      let current = (yield* tasks.get(task.accountId, task.id)) ?? task
      while (!isTerminal(current.status)) {
        const left = until - (yield* Clock.currentTimeMillis)
        if (left <= 0) break
        yield* Effect.race(settled, Effect.sleep(left))
        current = (yield* tasks.get(task.accountId, task.id)) ?? current
      }
      return { task: current, waited: true }
    })

    const awaitTask = (task: TaskRecord, maxWaitMs: number): Effect.Effect<Awaited, StoreUnavailable> =>
      isTerminal(task.status) || maxWaitMs <= 0 ? Effect.succeed({ task, waited: true }) : Effect.scoped(waitFor(task, maxWaitMs))

    return TaskRunner.of({
      submit: observed as TaskRunner["Service"]["submit"],
      awaitTask,
      follow: (task, after) =>
        Effect.flatMap(tasks.holdStream(task.accountId, maxStreams), (held) =>
          held
            ? Effect.succeed(TaskEvents.changes(tasks, task, after, readEnded))
            : Effect.fail(
                new Errors.ConcurrencyLimited({
                  message: `This account has ${maxStreams} event streams open already, the most it may; close one (or poll GET /api/v1/jobs/{id}) and retry.`,
                  retryAfterSeconds: STREAM_RETRY_SECONDS
                })
              )
        ),
      get: (caller, id) =>
        Ids.isTaskId(id)
          ? Effect.flatMap(tasks.get(caller.accountId, id), (task) =>
              task === undefined ? Effect.fail(jobNotFound(id)) : Effect.succeed(task)
            )
          : Effect.fail(jobNotFound(id)),
      list: Effect.fnUntraced(function* (caller: Caller, query: ListQuery = {}) {
        const { limit = LIST_LIMIT, before, ...filter } = query
        if (before !== undefined && (!Ids.isTaskId(before) || (yield* tasks.get(caller.accountId, before)) === undefined)) {
          return yield* new Errors.JobNotFound({
            message: `No page before ${JSON.stringify(before)}: pass a nextCursor this account received, or none for the newest tasks.`
          })
        }
        const page = yield* tasks.list(caller.accountId, limit + 1, { ...filter, before: before as TaskId | undefined })
        return {
          tasks: page.slice(0, limit),
          nextCursor: page.length > limit ? (page[limit - 1]?.id ?? null) : null
        }
      }),
      cancel: Effect.fnUntraced(function* (caller: Caller, id: string) {
        if (!Ids.isTaskId(id)) return yield* jobNotFound(id)
        const result = yield* tasks.cancel(caller.accountId, id, new Date(yield* Clock.currentTimeMillis))
        if (result === undefined) return yield* jobNotFound(id)
        if (result._tag === "NotCancelable") {
          return yield* new Errors.TaskNotCancelable({
            message: `Task ${id} is ${result.task.status} already; only queued, submitting and running tasks can be canceled.`
          })
        }
        return { task: result.task, pending: result._tag === "Requested" }
      })
    })
  })

export const layer = (
  options: Options
): Layer.Layer<TaskRunner, never, Catalog | Pricer | TaskStore | MediaStore | BudgetStore | Accounts> =>
  Layer.effect(TaskRunner, make(options))
