/**
 * The Reconciler settles tasks in reconciliation_required without ever resending: it polls the job
 * by its upstream id (recorded, named by a verified callback, or looked up by reference) and
 * resolves it through `TaskStore.resolve` (charge or release in the same write): succeeded, failed,
 * cancelled past its deadline, or failed UPSTREAM_NEVER_RECEIVED once "not found" has held for
 * `notFoundAfterMs` (10 minutes). Tasks it cannot find are left to an operator. A callback settles
 * a submitting or running task the same way at once. Runs every `intervalMs` (a minute) per worker.
 */
import { Clock, Context, Duration, Effect, Layer } from "effect"
import type { BlobStore } from "../media/BlobStore.ts"
import { Executors } from "./Executors.ts"
import type { TaskId } from "../domain/Ids.ts"
import type { MediaStore } from "../media/MediaStore.ts"
import * as Outputs from "./Outputs.ts"
import { settle } from "../pricing/Pricer.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import * as TaskMetrics from "../observability/TaskMetrics.ts"
import * as ErrorCode from "../domain/TaskErrorCode.ts"
import { TaskStore } from "./TaskStore.ts"
import type { Resolution, TaskRecord } from "./TaskStore.ts"

export interface Options {
  /** Time between passes of `run`. Default one minute. */
  readonly intervalMs?: number | undefined
  /** Tasks read per page. Default 100. */
  readonly pageSize?: number | undefined
  /** Tasks looked up at once. Default 8. */
  readonly concurrency?: number | undefined
  /** How long "no such job" must hold before the task is released. Default 10 minutes. */
  readonly notFoundAfterMs?: number | undefined
  readonly maxResultBytes?: number | undefined
  readonly downloadTimeoutMs?: number | undefined
  readonly fetch?: typeof globalThis.fetch | undefined
}

/** What one task's reconciliation came to. */
export type Outcome =
  | { readonly _tag: "Succeeded"; readonly task: TaskRecord }
  | { readonly _tag: "Failed"; readonly task: TaskRecord }
  /** The upstream is still at it, or its "not found" is too recent to trust. */
  | { readonly _tag: "Pending" }
  /** Only an operator can settle it. */
  | { readonly _tag: "NeedsOperator"; readonly reason: string }
  /** The upstream could not be asked now; the next pass tries again. */
  | { readonly _tag: "Unreachable"; readonly message: string }
  /** The task is not (or no longer) in a status this can settle. */
  | { readonly _tag: "Skipped" }
  /** A callback named a job other than the one the task records. */
  | { readonly _tag: "OtherJob"; readonly upstreamRef: string }

export interface Summary {
  readonly examined: number
  readonly succeeded: number
  readonly failed: number
  /** Pending, NeedsOperator and Unreachable together. */
  readonly left: number
}

export type Requirements = TaskStore | MediaStore | BlobStore | Executors

export class Reconciler extends Context.Service<
  Reconciler,
  {
    /**
     * Reconciles one task (as read from the store). With `upstreamId` (a verified callback named
     * the job) a submitting or running task is settled too, when the job has ended.
     */
    readonly reconcile: (task: TaskRecord, upstreamId?: string | undefined) => Effect.Effect<Outcome>
    /** One pass over every task in reconciliation_required. */
    readonly reconcileAll: Effect.Effect<Summary, StoreUnavailable>
  }
>()("@taskmeter/kernel/Reconciler") {}

export const make = (options: Options = {}): Effect.Effect<Reconciler["Service"], never, Requirements> =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    const executors = yield* Executors
    const context = yield* Effect.context<Requirements>()
    const pageSize = options.pageSize ?? 100
    const notFoundAfterMs = options.notFoundAfterMs ?? 10 * 60 * 1000
    const outputOptions: Outputs.Options = {
      maxBytes: options.maxResultBytes ?? 512 * 1024 * 1024,
      timeoutMs: options.downloadTimeoutMs ?? 10 * 60 * 1000,
      fetch: options.fetch
    }

    const resolve = (task: TaskRecord, learned: string | undefined, resolution: Omit<Resolution, "taskId" | "now" | "from">) =>
      Effect.gen(function* () {
        const now = new Date(yield* Clock.currentTimeMillis)
        const from = task.status as NonNullable<Resolution["from"]>
        const resolved = yield* store.resolve({
          taskId: task.id,
          now,
          from,
          ...(learned === undefined ? {} : { upstreamRef: learned }),
          ...resolution
        })
        if (resolved === undefined) return { _tag: "Skipped" } as const
        yield* TaskMetrics.ended(resolved)
        return resolved.status === "succeeded"
          ? ({ _tag: "Succeeded", task: resolved } as const)
          : ({ _tag: "Failed", task: resolved } as const)
      })

    const settleable = (task: TaskRecord, learned: string | undefined) =>
      task.status === "reconciliation_required" ||
      (learned !== undefined && (task.status === "submitting" || task.status === "running"))

    const reconcile = (task: TaskRecord, learned?: string | undefined): Effect.Effect<Outcome> =>
      Effect.gen(function* () {
        if (!settleable(task, learned)) return { _tag: "Skipped" } as const
        if (learned !== undefined && task.upstreamRef !== null && task.upstreamRef !== learned) {
          return { _tag: "OtherJob", upstreamRef: task.upstreamRef } as const
        }
        // Kept at once: whoever settles the task next (this, a later pass, a worker) polls the job.
        if (learned !== undefined && task.upstreamRef === null) yield* store.noteUpstream(task.id, learned)
        const adapter = executors.adapterFor(task.model)
        if (adapter === undefined) return { _tag: "NeedsOperator", reason: `no executor serves ${task.model}` } as const
        const model = task.model
        const reference = task.id
        const now = yield* Clock.currentTimeMillis
        const by = learned === undefined ? "reconciler" : "provider callback"

        let upstreamId = learned ?? task.upstreamRef
        if (upstreamId === null) {
          if (adapter.lookup === undefined) {
            return { _tag: "NeedsOperator", reason: `provider ${adapter.provider} cannot look jobs up by reference` } as const
          }
          const found = yield* adapter.lookup({ model, reference })
          if (found === undefined) {
            return now - task.updatedAt.getTime() < notFoundAfterMs
              ? ({ _tag: "Pending" } as const)
              : yield* resolve(task, undefined, {
                  to: "failed",
                  errorCode: ErrorCode.NeverReceived,
                  note: `${by}: the upstream has no job for the task`
                })
          }
          upstreamId = found.upstreamId
        }
        const known = upstreamId === task.upstreamRef ? undefined : upstreamId
        const note = (what: string) => `${by}: upstream job ${upstreamId} ${what}`

        const polled = yield* adapter.poll({ model, upstreamId, reference })
        switch (polled._tag) {
          case "Pending": {
            // A task a worker still follows stays the worker's until it ends or expires.
            if (task.status !== "reconciliation_required" || now < task.deadlineAt.getTime()) return { _tag: "Pending" } as const
            if (adapter.cancel !== undefined) yield* Effect.ignore(adapter.cancel({ model, upstreamId }))
            return yield* resolve(task, known, {
              to: "failed",
              errorCode: ErrorCode.DeadlineExceeded,
              note: note("was still running at the deadline")
            })
          }
          case "Failed":
            return yield* resolve(task, known, { to: "failed", errorCode: polled.errorCode, note: note("failed") })
          case "Succeeded": {
            if (polled.outputs.length === 0) {
              return yield* resolve(task, known, { to: "failed", errorCode: ErrorCode.NoOutput, note: note("had no output") })
            }
            const stored = yield* Effect.result(Outputs.store(task, polled.outputs, outputOptions).pipe(Effect.provide(context)))
            if (stored._tag === "Failure") {
              if (stored.failure._tag === "BlobTooLarge")
                return yield* resolve(task, known, {
                  to: "failed",
                  errorCode: ErrorCode.ResultTooLarge,
                  note: note("succeeded")
                })
              if (stored.failure._tag === "DownloadRefused") {
                yield* Effect.logWarning("A result link was refused", stored.failure.message)
                return yield* resolve(task, known, {
                  to: "failed",
                  errorCode: ErrorCode.ResultUrlRefused,
                  note: note("succeeded")
                })
              }
              return { _tag: "Unreachable", message: stored.failure.message } as const
            }
            return yield* resolve(task, known, {
              to: "succeeded",
              assets: stored.success,
              chargeMicros: settle(task, polled.outputs.length),
              errorCode: null,
              note: note("succeeded")
            })
          }
        }
      }).pipe(
        Effect.catch(
          (error): Effect.Effect<Outcome> =>
            Effect.as(Effect.logWarning("Reconciliation could not reach its stores or upstream", error.message), {
              _tag: "Unreachable",
              message: error.message
            })
        ),
        Effect.annotateLogs({ taskId: task.id, model: task.model })
      )

    const reconcileAll = Effect.gen(function* () {
      let examined = 0
      let succeeded = 0
      let failed = 0
      let afterId: TaskId | undefined
      for (;;) {
        const page = yield* store.listByStatus("reconciliation_required", pageSize, afterId)
        // A page that does not move past `afterId` would repeat forever: stop there.
        if (page.length === 0 || (afterId !== undefined && page[0]!.id <= afterId)) break
        const outcomes = yield* Effect.forEach(page, (task) => reconcile(task), { concurrency: options.concurrency ?? 8 })
        examined += page.length
        for (const outcome of outcomes) {
          if (outcome._tag === "Succeeded") succeeded++
          else if (outcome._tag === "Failed") failed++
        }
        if (page.length < pageSize) break
        afterId = page[page.length - 1]!.id
      }
      return { examined, succeeded, failed, left: examined - succeeded - failed }
    })

    return Reconciler.of({ reconcile, reconcileAll })
  })

export const layer = (options: Options = {}): Layer.Layer<Reconciler, never, Requirements> =>
  Layer.effect(Reconciler, make(options))

/** Runs a pass every `intervalMs` until interrupted; a failed pass is logged and the next one comes. */
export const run = (options: Options = {}): Effect.Effect<never, never, Requirements> =>
  Effect.gen(function* () {
    const reconciler = yield* make(options)
    const interval = Duration.millis(options.intervalMs ?? 60_000)
    for (;;) {
      const summary = yield* Effect.result(reconciler.reconcileAll)
      if (summary._tag === "Failure") yield* Effect.logWarning("Reconciliation pass failed", summary.failure.message)
      else if (summary.success.examined > 0) yield* Effect.logInfo("Reconciliation pass", summary.success)
      yield* Effect.sleep(interval)
    }
  })
