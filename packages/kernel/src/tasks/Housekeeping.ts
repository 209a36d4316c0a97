/**
 * Housekeeping: upkeep of the stores that no request does. Two chores, each on its own clock:
 *
 * - Purging expired Idempotency-Keys. An expired key is taken over by the next admission that
 *   names it, but a key never named again would stay forever, one row per admission. A pass
 *   deletes the keys that expired `graceMs` (5 minutes) before it began, through
 *   `TaskStore.purgeIdempotencyKeys` in statements of `batchSize` (1,000) keys until one deletes
 *   fewer, and logs how many it deleted. The grace covers clocks of other processes that run a
 *   little behind: to them a key expired here may still be live, and deleting it would admit a
 *   retry anew instead of replaying it. Every `intervalMs` (5 minutes).
 * - Sweeping orphaned result files. Outputs stores a task's files and their records before its
 *   worker records the success; when that write is refused (the lease was taken over, the
 *   status moved on), they stay, named by no task's assets. A sweep deletes, through
 *   `MediaStore.purgeOrphanResults`, the records of succeeded and failed tasks that their assets
 *   do not name and that are `orphanResultGraceMs` (1 hour) old, `batchSize` at a time until a
 *   batch comes back short, removes each batch's files from the BlobStore, and logs how many.
 *   The grace is a margin past the leases and downloads of a worker that lost its task; the
 *   sweep's safety does not rest on it, as a succeeded or failed task's assets never change
 *   again. The records go first: nobody references them, and a file whose removal fails is
 *   logged and left, orphaned as before; the sweep then stops, so that a failing BlobStore
 *   cannot turn more records into files nobody tracks. Never at the moment a write is refused:
 *   a success whose answer was lost looks refused when retried, and its files are the task's.
 *   Every `orphanResultIntervalMs` (1 hour): telling an orphan apart reads every older result
 *   and its task, so a sweep costs in proportion to all results stored, not to the orphans.
 *
 * Each worker process (`TaskWorker.serve`) runs both chores at start and then on their
 * intervals; chores of several processes at once delete each row once and do not wait for each
 * other. A failed chore is logged and runs again at its next turn.
 *
 * @example
 * ```ts
 * // keys purged every minute, orphaned files swept after a day
 * TaskWorker.serve({ housekeeping: { intervalMs: 60_000, orphanResultGraceMs: 24 * 3_600_000 } })
 * ```
 */
import { Clock, Duration, Effect } from "effect"
import { BlobStore } from "../media/BlobStore.ts"
import { MediaStore } from "../media/MediaStore.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import { TaskStore } from "./TaskStore.ts"

export interface Options {
  /** Time between purges of expired Idempotency-Keys. Default 5 minutes. */
  readonly intervalMs?: number | undefined
  /** Keys, or orphaned result records, deleted by one statement. Default 1,000. */
  readonly batchSize?: number | undefined
  /** How long after its expiry a key is purged. Default 5 minutes. */
  readonly graceMs?: number | undefined
  /** Time between sweeps of orphaned result files. Default 1 hour. */
  readonly orphanResultIntervalMs?: number | undefined
  /** How old an orphaned result record must be to be swept. Default 1 hour. */
  readonly orphanResultGraceMs?: number | undefined
}

export const defaults = {
  intervalMs: 5 * 60_000,
  batchSize: 1_000,
  graceMs: 5 * 60_000,
  orphanResultIntervalMs: 60 * 60_000,
  orphanResultGraceMs: 60 * 60_000
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

export interface Swept {
  /** Orphaned result records deleted. */
  readonly records: number
  /** Their files removed from the BlobStore; the others were logged and left. */
  readonly removed: number
}

/**
 * One sweep: deletes the orphaned result records created `orphanResultGraceMs` before now, in
 * batches of `batchSize`, and removes their files. Stops after a short batch, or after a batch
 * with a file it could not remove.
 */
export const sweepOrphanResults = (
  options: Options = {}
): Effect.Effect<Swept, StoreUnavailable, MediaStore | BlobStore> =>
  Effect.gen(function*() {
    const media = yield* MediaStore
    const blobs = yield* BlobStore
    const batchSize = options.batchSize ?? defaults.batchSize
    const cutoff = new Date(
      (yield* Clock.currentTimeMillis) - (options.orphanResultGraceMs ?? defaults.orphanResultGraceMs)
    )
    let records = 0
    let removed = 0
    for (;;) {
      const purged = yield* media.purgeOrphanResults(cutoff, batchSize)
      records += purged.length
      let left = 0
      for (const { blobKey } of purged) {
        const removal = yield* Effect.result(blobs.remove(blobKey))
        if (removal._tag === "Success") {
          removed++
        } else {
          left++
          yield* Effect.logWarning("Could not remove an orphaned result file; it is left", {
            blobKey,
            error: removal.failure.message
          })
        }
      }
      if (purged.length < batchSize || left > 0) return { records, removed }
    }
  })

/** Runs `chore` at once and then every `intervalMs`, forever. */
const every = <R>(intervalMs: number, chore: Effect.Effect<void, never, R>): Effect.Effect<never, never, R> =>
  Effect.gen(function*() {
    const interval = Duration.millis(intervalMs)
    for (;;) {
      yield* chore
      yield* Effect.sleep(interval)
    }
  })

/** Runs both chores at once and then on their intervals until interrupted; a failed one is logged and runs again at its next turn. */
export const run = (options: Options = {}): Effect.Effect<never, never, TaskStore | MediaStore | BlobStore> =>
  Effect.raceAllFirst([
    every(
      options.intervalMs ?? defaults.intervalMs,
      purgeIdempotencyKeys(options).pipe(
        Effect.flatMap((deleted) =>
          deleted > 0 ? Effect.logInfo("Purged expired Idempotency-Keys", { deleted }) : Effect.void
        ),
        Effect.catchCause((cause) => Effect.logWarning("Purging expired Idempotency-Keys failed", cause))
      )
    ),
    every(
      options.orphanResultIntervalMs ?? defaults.orphanResultIntervalMs,
      sweepOrphanResults(options).pipe(
        Effect.flatMap((swept) =>
          swept.records > 0 ? Effect.logInfo("Removed orphaned result files", swept) : Effect.void
        ),
        Effect.catchCause((cause) => Effect.logWarning("Sweeping orphaned result files failed", cause))
      )
    )
  ])
