/**
 * The TaskWorker drains the queue: it claims tasks from the TaskStore, submits them to their
 * provider adapter, follows them upstream and records the outcome with its charge or release in
 * one compare-and-set write (queued → submitting → running → succeeded | failed, or
 * reconciliation_required when a submit's outcome is unknown). `layer` runs it beside the API,
 * `serve()` in a worker process; leases, takeover and retries: docs/decisions.md, Tasks.
 */
import { randomUUID } from "node:crypto"
import { hostname } from "node:os"
import { Cause, Clock, Data, Effect, Exit, FiberSet, Latch, Layer, Request, RequestResolver } from "effect"
import type { BlobStore } from "../media/BlobStore.ts"
import { Catalog } from "../catalog/Catalog.ts"
import type { ModelInput } from "../catalog/Catalog.ts"
import { CallbackUrls } from "./CallbackUrls.ts"
import { Executors } from "./Executors.ts"
import * as Heartbeat from "../observability/Heartbeat.ts"
import * as Housekeeping from "./Housekeeping.ts"
import * as Metrics from "../observability/Metrics.ts"
import * as TaskMetrics from "../observability/TaskMetrics.ts"
import * as TraceContext from "../observability/TraceContext.ts"
import type { AccountId } from "../domain/Ids.ts"
import * as MediaReference from "../media/MediaReference.ts"
import type { MediaStore } from "../media/MediaStore.ts"
import { MediaUrls } from "../media/MediaUrls.ts"
import * as Outputs from "./Outputs.ts"
import { settle } from "../pricing/Pricer.ts"
import { percentOf } from "./Provider.ts"
import type { ProviderError, ProviderOutput, ProviderV1 } from "./Provider.ts"
import * as Reconciler from "./Reconciler.ts"
import * as ErrorCode from "../domain/TaskErrorCode.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import { isTerminal } from "../domain/TaskStatus.ts"
import type { TaskStatus } from "../domain/TaskStatus.ts"
import { TaskStore } from "./TaskStore.ts"
import type { WebhookStore } from "../webhooks/WebhookStore.ts"
import type { Claim, TaskRecord, TransitionRequest, TransitionResult } from "./TaskStore.ts"

export interface Options {
  /** Names this worker's claims; defaults to host, pid and a random suffix. */
  readonly workerId?: string | undefined
  /** How long a claim holds a task without renewal. Default 30 s; renewed every third of it. */
  readonly leaseMs?: number | undefined
  /** Tasks under way at once in this worker, on top of the executors' limits. Default 256. */
  readonly maxTasks?: number | undefined
  /** The most tasks one claim takes. Default 100. */
  readonly claimBatch?: number | undefined
  /** The slow-poll fallback between empty claims. Default 1 s. */
  readonly idleWaitMs?: number | undefined
  /** Status polls start this far apart and double up to `pollMaxMs`. Defaults 1 s and 10 s. */
  readonly pollInitialMs?: number | undefined
  readonly pollMaxMs?: number | undefined
  /** Retries of RateLimited and Retryable steps without `retryAfterMs`. Defaults 1 s doubling to 30 s. */
  readonly retryInitialMs?: number | undefined
  readonly retryMaxMs?: number | undefined
  /** A task waiting for an upstream slot asks again this often, doubling. Defaults 100 ms up to 1 s. */
  readonly slotWaitInitialMs?: number | undefined
  readonly slotWaitMaxMs?: number | undefined
  /** The largest result file copied from an upstream. Default 512 MiB. */
  readonly maxResultBytes?: number | undefined
  /** How long one result download may take. Default 10 minutes. */
  readonly downloadTimeoutMs?: number | undefined
  /** Tests: the transport of result downloads; the address policy still applies (see `Outputs`). */
  readonly fetch?: typeof globalThis.fetch | undefined
}

export type Requirements = TaskStore | MediaStore | BlobStore | Executors | MediaUrls | Catalog

/** The worker stops working on a task without writing: another worker owns it now, or will. */
class Dropped extends Data.TaggedError("Dropped")<{ readonly reason: string }> {}

/** How a provider step that may be retried ended. */
type Attempt<A> =
  | { readonly _tag: "Ok"; readonly value: A }
  | { readonly _tag: "Error"; readonly error: ProviderError }
  | { readonly _tag: "DeadlineReached" }

interface Write extends Request.Request<TransitionResult, StoreUnavailable> {
  readonly _tag: "Write"
  readonly transition: TransitionRequest
}
const Write = Request.tagged<Write>("Write")

/** initial × 2^attempt, at most max. */
const backoff = (initialMs: number, maxMs: number, attempt: number): number =>
  Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30))

const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

const LAPSED = new Date(0)
const GIVE_UP_TIMEOUT_MS = 2_000

const defaults = (options: Options) => ({
  workerId: options.workerId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
  leaseMs: options.leaseMs ?? 30_000,
  maxTasks: options.maxTasks ?? 256,
  claimBatch: options.claimBatch ?? 100,
  idleWaitMs: options.idleWaitMs ?? 1_000,
  pollInitialMs: options.pollInitialMs ?? 1_000,
  pollMaxMs: options.pollMaxMs ?? 10_000,
  retryInitialMs: options.retryInitialMs ?? 1_000,
  retryMaxMs: options.retryMaxMs ?? 30_000,
  slotWaitInitialMs: options.slotWaitInitialMs ?? 100,
  slotWaitMaxMs: options.slotWaitMaxMs ?? 1_000,
  outputs: {
    maxBytes: options.maxResultBytes ?? 512 * 1024 * 1024,
    timeoutMs: options.downloadTimeoutMs ?? 10 * 60 * 1000,
    fetch: options.fetch
  } satisfies Outputs.Options
})

/** Replaces each `media:` reference in the model's media fields with a signed link. */
const signMedia = (
  accountId: AccountId,
  input: ModelInput,
  mediaFields: ReadonlyArray<string>,
  links: MediaUrls["Service"]
): Effect.Effect<ModelInput> =>
  Effect.gen(function* () {
    if (mediaFields.length === 0) return input
    const signed: { [field: string]: unknown } = { ...input }
    const link = (value: unknown) =>
      typeof value === "string" && MediaReference.isMediaReference(value) ? links.sign(accountId, value) : Effect.succeed(value)
    for (const field of mediaFields) {
      const value = input[field]
      signed[field] = Array.isArray(value) ? yield* Effect.forEach(value, link) : yield* link(value)
    }
    return signed
  })

/**
 * Runs the worker until interrupted. Never fails: store outages are logged and waited out.
 */
export const run = (options: Options = {}): Effect.Effect<never, never, Requirements> =>
  Effect.scoped(
    Effect.gen(function* () {
      const config = defaults(options)
      const store = yield* TaskStore
      const executors = yield* Executors
      const links = yield* MediaUrls
      const callbacks = yield* CallbackUrls
      const catalog = yield* Catalog
      const context = yield* Effect.context<Requirements>()

      const mediaFieldsOf = new Map(
        catalog.models.map((model) => [model.slug, model.fields.filter((field) => field.media).map((field) => field.name)])
      )

      // A batch the store refuses (a defect: one task's data, e.g. an upstream's text it cannot
      // hold) is written again one move at a time, so the other tasks' moves are not lost with it.
      const writeAll = (entries: ReadonlyArray<Request.Entry<Write>>): Effect.Effect<void> =>
        Effect.flatMap(Effect.exit(store.transitionAll(entries.map((entry) => entry.request.transition))), (exit) => {
          if (Exit.isFailure(exit)) {
            if (entries.length > 1 && Cause.hasDies(exit.cause)) {
              return Effect.forEach(entries, (entry) => writeAll([entry]), { discard: true })
            }
            return Effect.sync(() => entries.forEach((entry) => entry.completeUnsafe(Exit.failCause(exit.cause))))
          }
          return Effect.sync(() =>
            entries.forEach((entry, i) => {
              const result = exit.value[i]
              entry.completeUnsafe(
                result === undefined
                  ? Exit.die(new Error("TaskStore.transitionAll returned fewer results than requests"))
                  : Exit.succeed(result)
              )
            })
          )
        })

      const writes = RequestResolver.make<Write>(writeAll).pipe(RequestResolver.batchN(config.claimBatch * 2))

      /** A store call retried through an outage for up to one lease length, then Dropped. */
      const persistently = <A>(effect: Effect.Effect<A, StoreUnavailable>): Effect.Effect<A, Dropped> =>
        Effect.gen(function* () {
          const start = yield* Clock.currentTimeMillis
          for (let attempt = 0; ; attempt++) {
            const result = yield* Effect.result(effect)
            if (result._tag === "Success") return result.success
            const delay = backoff(100, 5_000, attempt)
            if ((yield* Clock.currentTimeMillis) + delay - start > config.leaseMs) {
              return yield* new Dropped({ reason: `store unavailable: ${result.failure.message}` })
            }
            yield* Effect.logWarning("Task store unavailable, retrying", result.failure.message)
            yield* Effect.sleep(delay)
          }
        })

      /**
       * A stopping worker hands its task on at once rather than after its lease lapses: a lease
       * "renewed" to the epoch has lapsed on every clock. Bounded, so that an unreachable store
       * cannot hold up shutdown; the lease then simply lapses as if the worker had died.
       */
      const giveUp = (taskId: TaskRecord["id"], leaseToken: string) =>
        store
          .renew(taskId, leaseToken, LAPSED)
          .pipe(
            Effect.timeoutOption(GIVE_UP_TIMEOUT_MS),
            Effect.ignore({ log: "Warn", message: "Could not give up a lease on stopping" })
          )

      const processClaim = (claim: Claim): Effect.Effect<void, never> => {
        const leaseToken = claim.leaseToken
        const adapter = executors.adapterFor(claim.task.model)
        const reference = claim.task.id
        const model = claim.task.model

        const move = (
          task: TaskRecord,
          from: TaskStatus,
          to: TaskStatus,
          extra: Partial<
            Pick<TransitionRequest, "errorCode" | "upstreamRef" | "upstreamAnswer" | "provider" | "assets" | "chargeMicros">
          > = {}
        ): Effect.Effect<TaskRecord, Dropped> =>
          Effect.gen(function* () {
            const at = yield* now
            const result = yield* persistently(
              Effect.request(
                Write({ transition: { taskId: task.id, leaseToken, from, to, now: at, keepLease: !isTerminal(to), ...extra } }),
                writes
              )
            )
            if (result._tag === "Done") {
              if (isTerminal(to)) yield* TaskMetrics.ended(result.task)
              return result.task
            }
            if (result._tag === "IllegalTransition") {
              yield* Effect.logWarning(`Task store refused ${result.from} -> ${result.to}`)
            }
            return yield* new Dropped({ reason: result._tag })
          }).pipe(
            Effect.withSpan(isTerminal(to) ? "TaskWorker.settle" : "TaskWorker.move", { attributes: { "taskmeter.to": to } })
          )

        /** Hands the task to reconciliation with what the upstream last answered. */
        const hold = (task: TaskRecord, from: "submitting" | "running", upstreamAnswer: string) =>
          Effect.asVoid(move(task, from, "reconciliation_required", { errorCode: ErrorCode.OutcomeUnknown, upstreamAnswer }))

        const fail = (task: TaskRecord, from: TaskStatus, errorCode: string) =>
          Effect.asVoid(move(task, from, "failed", { errorCode }))

        const pastDeadline = (task: TaskRecord) => Effect.map(Clock.currentTimeMillis, (ms) => ms >= task.deadlineAt.getTime())

        /** Runs a provider step again while `retryOn` says so, waiting in between, until the deadline. */
        const persist = <A>(
          task: TaskRecord,
          step: Effect.Effect<A, ProviderError>,
          retryOn: (error: ProviderError) => boolean
        ): Effect.Effect<Attempt<A>> =>
          Effect.gen(function* () {
            for (let attempt = 0; ; attempt++) {
              const result = yield* Effect.result(step)
              if (result._tag === "Success") return { _tag: "Ok", value: result.success }
              const error = result.failure
              if (!retryOn(error)) return { _tag: "Error", error }
              const delay = error.retryAfterMs ?? backoff(config.retryInitialMs, config.retryMaxMs, attempt)
              if ((yield* Clock.currentTimeMillis) + delay >= task.deadlineAt.getTime()) return { _tag: "DeadlineReached" }
              yield* Effect.logDebug(`Upstream ${error.reason}, retrying in ${delay} ms`, error.message)
              yield* Effect.sleep(delay)
            }
          })

        const retryable = (error: ProviderError) => error.isRetryable
        // Reads (poll, lookup) change nothing upstream, so an unknown outcome is just another retry.
        const retryableRead = (error: ProviderError) => error.isRetryable || error.reason === "OutcomeUnknown"

        /** Copies the outputs and records success with the charge for what was delivered. */
        const complete = (
          task: TaskRecord,
          from: "submitting" | "running",
          upstreamRef: string,
          outputs: ReadonlyArray<ProviderOutput>
        ): Effect.Effect<void, Dropped> =>
          Effect.gen(function* () {
            if (outputs.length === 0) return yield* fail(task, from, ErrorCode.NoOutput)
            for (let attempt = 0; ; attempt++) {
              const stored = yield* Effect.result(
                Outputs.store(task, outputs, config.outputs).pipe(Effect.provide(context), Effect.withSpan("TaskWorker.outputs"))
              )
              if (stored._tag === "Success") {
                return yield* Effect.asVoid(
                  move(task, from, "succeeded", {
                    upstreamRef,
                    assets: stored.success,
                    chargeMicros: settle(task, outputs.length),
                    errorCode: null
                  })
                )
              }
              if (stored.failure._tag === "BlobTooLarge") return yield* fail(task, from, ErrorCode.ResultTooLarge)
              if (stored.failure._tag === "DownloadRefused") {
                yield* Effect.logWarning("A result link was refused", stored.failure.message)
                return yield* fail(task, from, ErrorCode.ResultUrlRefused)
              }
              const delay = backoff(config.retryInitialMs, config.retryMaxMs, attempt)
              if ((yield* Clock.currentTimeMillis) + delay >= task.deadlineAt.getTime()) {
                return yield* fail(task, from, ErrorCode.DeadlineExceeded)
              }
              yield* Effect.logWarning(`Storing results failed, retrying in ${delay} ms`, stored.failure.message)
              yield* Effect.sleep(delay)
            }
          })

        /** Whether the owner asked to cancel: the record at hand first, then the store's (a PK read per poll). */
        const cancelRequested = (task: TaskRecord, fresh: boolean): Effect.Effect<boolean> =>
          task.cancelRequestedAt !== null || fresh
            ? Effect.succeed(task.cancelRequestedAt !== null)
            : store.get(task.accountId, task.id).pipe(
                Effect.map((current) => current?.cancelRequestedAt != null),
                Effect.orElseSucceed(() => false)
              )

        /**
         * Polls the upstream job until it ends or the deadline passes. A cancel the owner asked
         * for is sent upstream once (where the adapter can); after it a failed job is CANCELED
         * (released) and a job that succeeded anyway settles as it finished.
         */
        const follow = (task: TaskRecord, provider: ProviderV1, upstreamId: string): Effect.Effect<void, Dropped> =>
          Effect.gen(function* () {
            let canceled = false
            let progress = task.progress
            for (let round = 0; ; round++) {
              if (provider.cancel !== undefined && !canceled && (yield* cancelRequested(task, round === 0))) {
                canceled = Exit.isSuccess(yield* Effect.exit(provider.cancel({ model, upstreamId })))
                if (canceled) round = 0
              }

              const polled = yield* persist(
                task,
                provider.poll({ model, upstreamId, reference }).pipe(TaskMetrics.providerCall(provider.provider, "poll")),
                retryableRead
              )
              if (polled._tag === "DeadlineReached") return yield* expire(task, provider, upstreamId)
              if (polled._tag === "Error") {
                return yield* fail(task, "running", canceled ? ErrorCode.Canceled : (polled.error.errorCode ?? ErrorCode.Failed))
              }
              const result = polled.value
              if (result._tag === "Succeeded") return yield* complete(task, "running", upstreamId, result.outputs)
              if (result._tag === "Failed") return yield* fail(task, "running", canceled ? ErrorCode.Canceled : result.errorCode)
              const percent = percentOf(result.progress)
              if (percent !== undefined && percent !== progress) {
                progress = percent
                // Best effort: a lost write shows older progress until the next change.
                yield* Effect.ignore(store.noteProgress(task.id, percent))
              }
              const left = task.deadlineAt.getTime() - (yield* Clock.currentTimeMillis)
              if (left <= 0) return yield* expire(task, provider, upstreamId)
              yield* Effect.sleep(Math.min(left, backoff(config.pollInitialMs, config.pollMaxMs, round)))
            }
          })

        /** Fails a running task past its deadline, asking the upstream to stop (best effort). */
        const expire = (task: TaskRecord, provider: ProviderV1, upstreamId: string) =>
          Effect.gen(function* () {
            if (provider.cancel !== undefined) {
              yield* Effect.ignore(
                provider.cancel({ model, upstreamId }).pipe(TaskMetrics.providerCall(provider.provider, "cancel"))
              )
            }
            yield* fail(task, "running", ErrorCode.DeadlineExceeded)
          })

        /** Sends a task that is in submitting and known not to be upstream yet. */
        const send = (task: TaskRecord, provider: ProviderV1): Effect.Effect<void, Dropped> =>
          Effect.gen(function* () {
            if (task.cancelRequestedAt !== null) return yield* fail(task, "submitting", ErrorCode.Canceled)
            const submitted = yield* persist(
              task,
              Effect.flatMap(signMedia(task.accountId, task.input, mediaFieldsOf.get(model) ?? [], links), (input) =>
                provider
                  .submit({ model, input, reference, callbackUrl: callbacks.urlFor(task) })
                  .pipe(TaskMetrics.providerCall(provider.provider, "submit"))
              ),
              retryable
            )
            if (submitted._tag === "DeadlineReached") return yield* fail(task, "submitting", ErrorCode.DeadlineExceeded)
            if (submitted._tag === "Error") {
              const error = submitted.error
              return error.reason === "OutcomeUnknown"
                ? yield* hold(task, "submitting", `submit: ${error.message}`)
                : yield* fail(task, "submitting", error.errorCode ?? ErrorCode.Rejected)
            }
            const result = submitted.value
            if (result._tag === "Completed") return yield* complete(task, "submitting", result.upstreamId, result.outputs)
            const running = yield* move(task, "submitting", "running", { upstreamRef: result.upstreamId })
            return yield* follow(running, provider, result.upstreamId)
          })

        /** A task left in submitting by a worker that died: find it upstream, never just resend. */
        const recover = (task: TaskRecord, provider: ProviderV1): Effect.Effect<void, Dropped> =>
          Effect.gen(function* () {
            // A verified callback named the job meanwhile: follow it.
            if (task.upstreamRef !== null) {
              const running = yield* move(task, "submitting", "running", { upstreamRef: task.upstreamRef })
              return yield* follow(running, provider, task.upstreamRef)
            }
            const lost = "a worker stopped while submitting; the submit's answer was not recorded"
            if (provider.lookup === undefined) {
              return yield* hold(task, "submitting", `${lost}, and ${provider.provider} cannot look jobs up by reference`)
            }
            const found = yield* persist(
              task,
              provider.lookup({ model, reference }).pipe(TaskMetrics.providerCall(provider.provider, "lookup")),
              retryableRead
            )
            if (found._tag !== "Ok") {
              return yield* hold(
                task,
                "submitting",
                `${lost}; lookup: ${found._tag === "Error" ? found.error.message : "no answer before the deadline"}`
              )
            }
            if (found.value === undefined) {
              return (yield* pastDeadline(task))
                ? yield* fail(task, "submitting", ErrorCode.DeadlineExceeded)
                : yield* send(task, provider)
            }
            const running = yield* move(task, "submitting", "running", { upstreamRef: found.value.upstreamId })
            return yield* follow(running, provider, found.value.upstreamId)
          })

        const work = (task: TaskRecord, provider: ProviderV1): Effect.Effect<void, Dropped> =>
          Effect.gen(function* () {
            switch (task.status) {
              case "queued": {
                if (yield* pastDeadline(task)) return yield* fail(task, "queued", ErrorCode.DeadlineExceeded)
                return yield* send(yield* move(task, "queued", "submitting", { provider: provider.provider }), provider)
              }
              case "submitting":
                return yield* recover(task, provider)
              case "running":
                return task.upstreamRef === null
                  ? yield* hold(task, "running", "running without a recorded upstream job")
                  : yield* follow(task, provider, task.upstreamRef)
              default:
                return
            }
          })

        const heartbeat: Effect.Effect<never, Dropped> = Effect.gen(function* () {
          for (;;) {
            yield* Effect.sleep(Math.max(1, Math.floor(config.leaseMs / 3)))
            const until = new Date((yield* Clock.currentTimeMillis) + config.leaseMs)
            const held = yield* store
              .renew(claim.task.id, leaseToken, until)
              .pipe(Effect.catch((error) => Effect.as(Effect.logWarning("Lease renewal failed", error.message), true)))
            if (!held) return yield* new Dropped({ reason: "LeaseLost" })
          }
        })

        /**
         * Runs `self` holding a slot of each of the model's store lanes, so that the limits hold
         * across processes: asks again until one frees (the heartbeat keeps the lease meanwhile).
         * A queued task whose deadline passes while it waits fails without a call upstream.
         */
        const lanes = executors.lanesFor(model)
        const withSlots = (self: Effect.Effect<void, Dropped>): Effect.Effect<void, Dropped> =>
          lanes.length === 0
            ? self
            : Effect.gen(function* () {
                for (let attempt = 0; ; attempt++) {
                  const at = yield* now
                  const taken = yield* persistently(store.takeSlots({ taskId: claim.task.id, leaseToken, lanes, now: at }))
                  if (taken) break
                  if (claim.task.status === "queued" && at.getTime() >= claim.task.deadlineAt.getTime()) {
                    return yield* fail(claim.task, "queued", ErrorCode.DeadlineExceeded)
                  }
                  yield* Effect.sleep(backoff(config.slotWaitInitialMs, config.slotWaitMaxMs, attempt))
                }
                return yield* self
              }).pipe(
                Effect.ensuring(
                  store
                    .releaseSlots({ taskId: claim.task.id, leaseToken, lanes: lanes.map((l) => l.lane) })
                    .pipe(Effect.ignore({ log: "Warn", message: "Could not release upstream slots; they lapse with the lease" }))
                )
              )

        const main: Effect.Effect<void, Dropped> =
          adapter === undefined
            ? claim.task.status === "queued"
              ? fail(claim.task, "queued", ErrorCode.ExecutionUnavailable)
              : Effect.void
            : executors.withPermit(model)(withSlots(work(claim.task, adapter)))

        return Effect.raceFirst(main, heartbeat).pipe(
          Effect.onInterrupt(() => giveUp(claim.task.id, leaseToken)),
          Effect.catchTag("Dropped", (dropped) => Effect.logDebug(`Task dropped: ${dropped.reason}`)),
          Effect.catchCause((cause) => Effect.logError("Task worker defect", cause)),
          Effect.annotateLogs({ taskId: claim.task.id, model, workerId: config.workerId }),
          // A trace of its own per claim, linked to the submitting request's (TraceContext).
          Effect.withSpan("TaskWorker.task", {
            root: true,
            kind: "consumer",
            links: TraceContext.linksOf(claim.task.traceparent),
            attributes: {
              "taskmeter.task_id": claim.task.id,
              "taskmeter.model": model,
              "taskmeter.attempt": claim.task.attempts
            }
          })
        )
      }

      /** The loop outlives a store outage or a store defect: it logs, idles, and carries on. */
      const idleOnFailure =
        <A>(what: string, fallback: NoInfer<A>) =>
        <E>(effect: Effect.Effect<A, E>): Effect.Effect<A> =>
          Effect.catchCause(effect, (cause) =>
            Effect.logWarning(what, cause).pipe(Effect.andThen(Effect.sleep(config.idleWaitMs)), Effect.as(fallback))
          )

      const tasks = yield* FiberSet.make<void, never>()
      const slotFreed = yield* Latch.make(false)
      let underWay = 0

      for (;;) {
        const capacity = yield* executors.capacity
        const limit = Math.min(config.maxTasks - underWay, config.claimBatch, capacity.total)
        yield* Heartbeat.beat
        if (limit <= 0 || capacity.models.length === 0) {
          // Closed before the check so that a task finishing in between still opens it.
          slotFreed.closeUnsafe()
          const again = yield* executors.capacity
          if (Math.min(config.maxTasks - underWay, again.total) <= 0 || again.models.length === 0) {
            // Bounded, so that a worker busy with long tasks still beats.
            yield* Effect.timeoutOption(slotFreed.await, config.idleWaitMs)
          }
          continue
        }
        const claims = yield* store
          .claim({
            workerId: config.workerId,
            limit,
            leaseMs: config.leaseMs,
            now: yield* now,
            models: capacity.models
          })
          .pipe(Metrics.timed(Metrics.claimDuration, {}), idleOnFailure<ReadonlyArray<Claim>>("Claiming tasks failed", []))
        for (const claim of claims) {
          if (claim.task.attempts === 1) {
            yield* Metrics.observeSince(Metrics.queueWait, { model: claim.task.model }, claim.task.createdAt.getTime())
          }
          underWay++
          yield* FiberSet.run(
            tasks,
            processClaim(claim).pipe(
              Effect.ensuring(
                Effect.sync(() => {
                  underWay--
                  slotFreed.openUnsafe()
                })
              )
            )
          )
        }
        // A short batch means the queue is drained for now: wait for news instead of asking again.
        if (claims.length < limit) {
          yield* store.awaitWork(config.idleWaitMs).pipe(idleOnFailure<void>("Waiting for work failed", undefined))
        }
      }
    })
  )

export interface ServeOptions extends Options {
  readonly reconciler?: Reconciler.Options | undefined
  readonly housekeeping?: Housekeeping.Options | undefined
}

/**
 * What a dedicated worker process runs (`npx taskmeter worker`), and the server process in
 * the background: the worker, the reconciler and the housekeeping, until interrupted.
 */
export const serve = (options: ServeOptions = {}): Effect.Effect<never, never, Requirements | WebhookStore> =>
  Effect.raceAllFirst([run(options), Reconciler.run(options.reconciler ?? {}), Housekeeping.run(options.housekeeping ?? {})])

/** `serve` in the background of a layer's scope. */
export const layer = (options: ServeOptions = {}): Layer.Layer<never, never, Requirements | WebhookStore> =>
  Layer.effectDiscard(Effect.forkScoped(serve(options)))
