/**
 * Housekeeping: upkeep of the stores that no request does. Today one chore: purging expired
 * Idempotency-Keys. An expired key is taken over by the next admission that names it, but a key
 * never named again would stay forever, one row per admission.
 *
 * A pass deletes the keys that expired `graceMs` (5 minutes) before it began, through
 * `TaskStore.purgeIdempotencyKeys` in statements of `batchSize` (1,000) keys until one deletes
 * fewer, and logs how many it deleted. The grace covers clocks of other processes that run a
 * little behind: to them a key expired here may still be live, and deleting it would admit a
 * retry anew instead of replaying it. Each worker process (`TaskWorker.serve`) runs a pass at
 * start and then every `intervalMs` (5 minutes); passes of several processes at once delete
 * each key once and do not wait for each other.
 *
 * @example
 * ```ts
 * // a pass every minute instead, beside the worker
 * TaskWorker.serve({ housekeeping: { intervalMs: 60_000 } })
 * ```
 */
import { Clock, Duration, Effect } from "effect"
import type { StoreUnavailable } from "./StoreError.ts"
import { TaskStore } from "./TaskStore.ts"

export interface Options {
  /** Time between passes of `run`. Default 5 minutes. */
  readonly intervalMs?: number | undefined
  /** Keys deleted by one statement. Default 1,000. */
  readonly batchSize?: number | undefined
  /** How long after its expiry a key is purged. Default 5 minutes. */
  readonly graceMs?: number | undefined
}

export const defaults = {
  intervalMs: 5 * 60_000,
  batchSize: 1_000,
  graceMs: 5 * 60_000
} as const

/** One pass: deletes every key expired `graceMs` before now, in statements of `batchSize`; how many. */
export const purgeIdempotencyKeys = (options: Options = {}): Effect.Effect<number, StoreUnavailable, TaskStore> =>
  Effect.gen(function*() {
    const store = yield* TaskStore
    const batchSize = options.batchSize ?? defaults.batchSize
    // Fixed for the pass, so that keys expiring meanwhile cannot keep it going.
    const cutoff = new Date((yield* Clock.currentTimeMillis) - (options.graceMs ?? defaults.graceMs))
    let total = 0
    for (;;) {
      const deleted = yield* store.purgeIdempotencyKeys(cutoff, batchSize)
      total += deleted
      if (deleted === 0 || deleted < batchSize) return total
    }
  })

/** Runs a pass at once and then every `intervalMs` until interrupted; a failed pass is logged and the next one comes. */
export const run = (options: Options = {}): Effect.Effect<never, never, TaskStore> =>
  Effect.gen(function*() {
    const interval = Duration.millis(options.intervalMs ?? defaults.intervalMs)
    for (;;) {
      yield* purgeIdempotencyKeys(options).pipe(
        Effect.flatMap((deleted) =>
          deleted > 0 ? Effect.logInfo("Purged expired Idempotency-Keys", { deleted }) : Effect.void
        ),
        Effect.catchCause((cause) => Effect.logWarning("Purging expired Idempotency-Keys failed", cause))
      )
      yield* Effect.sleep(interval)
    }
  })
