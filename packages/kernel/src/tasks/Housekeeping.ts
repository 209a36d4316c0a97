/**
 * Housekeeping: store upkeep no request does, offered by each worker process (`TaskWorker.serve`)
 * at start and then on its intervals, and run by one process at a time when due (a chore taken
 * through `TaskStore.takeChore`): purging expired Idempotency-Keys (every 5 minutes, keys expired
 * for 5), sweeping orphaned result records and files (hourly, older than 1 hour, reading only
 * the results stored since the last sweep) and removing the files of expired results and uploads
 * (every 10 minutes, reading only those due, Retention) and purging the webhook deliveries (with
 * their attempts) finished longer than `webhookLogRetentionMs` ago (hourly, oldest finish first).
 * A failed chore is logged and runs at its next turn.
 * Why and how: docs/decisions.md (Ledger and admission; Tasks and providers).
 */
import { randomUUID } from "node:crypto"
import { Clock, Effect } from "effect"
import { BlobStore } from "../media/BlobStore.ts"
import { MediaStore } from "../media/MediaStore.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import { WebhookStore } from "../webhooks/WebhookStore.ts"
import { asChore, every } from "./Chores.ts"
import { TaskStore } from "./TaskStore.ts"

export interface Options {
  /** Time between purges of expired Idempotency-Keys. Default 5 minutes. */
  readonly intervalMs?: number | undefined
  /** Keys, orphaned result records or webhook deliveries, deleted by one statement. Default 1,000. */
  readonly batchSize?: number | undefined
  /** How long after its expiry a key is purged. Default 5 minutes. */
  readonly graceMs?: number | undefined
  /** Time between sweeps of orphaned result files. Default 1 hour. */
  readonly orphanResultIntervalMs?: number | undefined
  /** How old an orphaned result record must be to be swept. Default 1 hour. */
  readonly orphanResultGraceMs?: number | undefined
  /** Time between removals of expired result files and uploads. Default 10 minutes. */
  readonly expiryIntervalMs?: number | undefined
  /** Time between purges of finished webhook deliveries. Default 1 hour. */
  readonly webhookLogIntervalMs?: number | undefined
  /** How long a delivered or failed webhook delivery stays in the log (WEBHOOK_LOG_RETENTION). Default 30 days. */
  readonly webhookLogRetentionMs?: number | undefined
  /** How long a process holds a chore it took, so that another takes it if that process dies mid-pass. Default 10 minutes. */
  readonly choreLeaseMs?: number | undefined
}

export const defaults = {
  intervalMs: 5 * 60_000,
  batchSize: 1_000,
  graceMs: 5 * 60_000,
  orphanResultIntervalMs: 60 * 60_000,
  orphanResultGraceMs: 60 * 60_000,
  expiryIntervalMs: 10 * 60_000,
  webhookLogIntervalMs: 60 * 60_000,
  webhookLogRetentionMs: 30 * 24 * 60 * 60_000,
  choreLeaseMs: 10 * 60_000
} as const

/** Runs `purge` in statements of `batchSize` until one deletes fewer; how many in all. */
const inBatches = <E, R>(purge: (limit: number) => Effect.Effect<number, E, R>, batchSize: number): Effect.Effect<number, E, R> =>
  Effect.gen(function* () {
    let total = 0
    for (;;) {
      const deleted = yield* purge(batchSize)
      total += deleted
      if (deleted < batchSize) return total
    }
  })

/** One pass: deletes every key expired `graceMs` before now, in statements of `batchSize`; how many. */
export const purgeIdempotencyKeys = (options: Options = {}): Effect.Effect<number, StoreUnavailable, TaskStore> =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    const batchSize = options.batchSize ?? defaults.batchSize
    // Fixed for the pass, so that keys expiring meanwhile cannot keep it going.
    const cutoff = new Date((yield* Clock.currentTimeMillis) - (options.graceMs ?? defaults.graceMs))
    return yield* inBatches((limit) => store.purgeIdempotencyKeys(cutoff, limit), batchSize)
  })

/**
 * One pass: deletes the webhook deliveries finished `webhookLogRetentionMs` before now, with their
 * attempts, in statements of `batchSize`; how many.
 */
export const purgeWebhookLog = (options: Options = {}): Effect.Effect<number, StoreUnavailable, WebhookStore> =>
  Effect.gen(function* () {
    const store = yield* WebhookStore
    const batchSize = options.batchSize ?? defaults.batchSize
    // Fixed for the pass, so that deliveries finishing meanwhile cannot keep it going.
    const cutoff = new Date((yield* Clock.currentTimeMillis) - (options.webhookLogRetentionMs ?? defaults.webhookLogRetentionMs))
    return yield* inBatches((limit) => store.purgeFinished(cutoff, limit), batchSize)
  })

/** Removes `blobKeys` in one `removeMany`; false when that fails (logged, the files left). */
const removeFiles = (blobKeys: ReadonlyArray<string>, what: string): Effect.Effect<boolean, never, BlobStore> =>
  Effect.gen(function* () {
    if (blobKeys.length === 0) return true
    const removal = yield* Effect.result((yield* BlobStore).removeMany(blobKeys))
    if (removal._tag === "Success") return true
    yield* Effect.logWarning(`Could not remove ${what} files; they are left`, {
      files: blobKeys.length,
      first: blobKeys[0],
      error: removal.failure.message
    })
    return false
  })

export interface Swept {
  /** Orphaned result records deleted. */
  readonly records: number
  /** Their files removed from the BlobStore; those of a batch that failed were logged and left. */
  readonly removed: number
}

/**
 * One sweep: judges the result records stored since the last sweep (and those it left while their
 * task was unfinished) up to `orphanResultGraceMs` before now, in batches of `batchSize`, deletes
 * the orphans and removes each batch's files in one `removeMany`. Stops after a short batch, or
 * after a batch whose files it could not remove.
 */
export const sweepOrphanResults = (options: Options = {}): Effect.Effect<Swept, StoreUnavailable, MediaStore | BlobStore> =>
  Effect.gen(function* () {
    const media = yield* MediaStore
    const batchSize = options.batchSize ?? defaults.batchSize
    const cutoff = new Date((yield* Clock.currentTimeMillis) - (options.orphanResultGraceMs ?? defaults.orphanResultGraceMs))
    let records = 0
    let removed = 0
    for (;;) {
      const pass = yield* media.purgeOrphanResults(cutoff, batchSize)
      records += pass.purged.length
      const blobKeys = pass.purged.map(({ blobKey }) => blobKey)
      if (!(yield* removeFiles(blobKeys, "orphaned result"))) return { records, removed }
      removed += blobKeys.length
      if (pass.judged < batchSize) return { records, removed }
    }
  })

/** One expiry pass: the records it marked removed, and how many of their files it removed. */
export interface Expired {
  readonly records: number
  readonly removed: number
}

/**
 * Marks the due records `expire` answers in batches of `batchSize` and removes each batch's files
 * in one `removeMany`. Stops after a short batch, or after a batch whose files it could not remove
 * (they are logged and left: the records are marked, so no pass reads them again).
 */
const removeDue = (
  expire: (limit: number) => Effect.Effect<ReadonlyArray<{ readonly blobKey: string }>, StoreUnavailable>,
  batchSize: number
): Effect.Effect<Expired, StoreUnavailable, BlobStore> =>
  Effect.gen(function* () {
    let records = 0
    let removed = 0
    for (;;) {
      const due = yield* expire(batchSize)
      records += due.length
      const blobKeys = due.map(({ blobKey }) => blobKey)
      if (!(yield* removeFiles(blobKeys, "expired"))) return { records, removed }
      removed += blobKeys.length
      if (due.length < batchSize) return { records, removed }
    }
  })

/** One pass: the result files, then the uploads, expired at now (Retention), in batches of `batchSize`. */
export const removeExpiredFiles = (
  options: Options = {}
): Effect.Effect<{ readonly results: Expired; readonly media: Expired }, StoreUnavailable, MediaStore | BlobStore> =>
  Effect.gen(function* () {
    const media = yield* MediaStore
    const batchSize = options.batchSize ?? defaults.batchSize
    // Fixed for the pass, so that files expiring meanwhile cannot keep it going.
    const now = new Date(yield* Clock.currentTimeMillis)
    const results = yield* removeDue((limit) => media.expireResults(now, limit), batchSize)
    const uploads = yield* removeDue((limit) => media.expireMedia(now, limit), batchSize)
    return { results, media: uploads }
  })

/**
 * Offers the chores at once and then on their intervals until interrupted, each run only when this
 * process takes it; a failed one is logged and runs again at its next turn.
 */
export const run = (options: Options = {}): Effect.Effect<never, never, TaskStore | MediaStore | BlobStore | WebhookStore> =>
  Effect.suspend(() => {
    const holder = randomUUID()
    const leaseMs = options.choreLeaseMs ?? defaults.choreLeaseMs
    const intervalMs = options.intervalMs ?? defaults.intervalMs
    const orphanResultIntervalMs = options.orphanResultIntervalMs ?? defaults.orphanResultIntervalMs
    const expiryIntervalMs = options.expiryIntervalMs ?? defaults.expiryIntervalMs
    const webhookLogIntervalMs = options.webhookLogIntervalMs ?? defaults.webhookLogIntervalMs
    return Effect.raceAllFirst([
      every(
        intervalMs,
        asChore(
          { name: "purge-idempotency-keys", holder, everyMs: intervalMs, leaseMs },
          purgeIdempotencyKeys(options).pipe(
            Effect.flatMap((deleted) =>
              deleted > 0 ? Effect.logInfo("Purged expired Idempotency-Keys", { deleted }) : Effect.void
            ),
            Effect.catchCause((cause) => Effect.logWarning("Purging expired Idempotency-Keys failed", cause))
          )
        )
      ),
      every(
        orphanResultIntervalMs,
        asChore(
          { name: "sweep-orphan-results", holder, everyMs: orphanResultIntervalMs, leaseMs },
          sweepOrphanResults(options).pipe(
            Effect.flatMap((swept) => (swept.records > 0 ? Effect.logInfo("Removed orphaned result files", swept) : Effect.void)),
            Effect.catchCause((cause) => Effect.logWarning("Sweeping orphaned result files failed", cause))
          )
        )
      ),
      every(
        expiryIntervalMs,
        asChore(
          { name: "remove-expired-files", holder, everyMs: expiryIntervalMs, leaseMs },
          removeExpiredFiles(options).pipe(
            Effect.flatMap((expired) =>
              expired.results.records + expired.media.records > 0 ? Effect.logInfo("Removed expired files", expired) : Effect.void
            ),
            Effect.catchCause((cause) => Effect.logWarning("Removing expired files failed", cause))
          )
        )
      ),
      every(
        webhookLogIntervalMs,
        asChore(
          { name: "purge-webhook-log", holder, everyMs: webhookLogIntervalMs, leaseMs },
          purgeWebhookLog(options).pipe(
            Effect.flatMap((deleted) =>
              deleted > 0 ? Effect.logInfo("Purged finished webhook deliveries", { deleted }) : Effect.void
            ),
            Effect.catchCause((cause) => Effect.logWarning("Purging finished webhook deliveries failed", cause))
          )
        )
      )
    ])
  })
