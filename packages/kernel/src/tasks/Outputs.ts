/**
 * Copies what an upstream delivered into our stores as a task's assets, before the TaskWorker or
 * Reconciler marks it succeeded: file results downloaded through `PublicFetch` (size-capped) into the
 * BlobStore under `results/<resultId>` and recorded in the MediaStore, text results as the asset's
 * `text`. Files are stored before records, records before the status changes; a failure removes the
 * blobs this call wrote. Each file asset carries the expiry its record was stored with (Retention:
 * the service's default, or the account's own, which the store applies). What is left when the success is refused: docs/decisions.md, Tasks.
 */
import { Clock, Data, Effect } from "effect"
import { BlobStore, BlobTooLarge } from "../media/BlobStore.ts"
import { makeResultId, makeTextAssetId } from "../domain/Ids.ts"
import type { AccountId, ResultId, TaskId } from "../domain/Ids.ts"
import { MediaStore } from "../media/MediaStore.ts"
import * as Retention from "../media/Retention.ts"
import * as PublicFetch from "../outbound/PublicFetch.ts"
import type { ResultRecord } from "../media/MediaStore.ts"
import type { ProviderOutput } from "./Provider.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import { toStorable } from "../domain/StorableText.ts"
import type { StoredAsset } from "./TaskStore.ts"

/**
 * A result link the address policy refuses (not https, a non-public host or address, a
 * redirect): trying again will not help, the task fails.
 */
export class DownloadRefused extends Data.TaggedError("DownloadRefused")<{ readonly message: string }> {}

/** A result link that could not be read; worth trying again later (or after polling anew). */
export class DownloadFailed extends Data.TaggedError("DownloadFailed")<{
  readonly message: string
  readonly cause?: unknown
}> {}

export interface Options {
  /** The largest file accepted from an upstream; bigger results fail the task. */
  readonly maxBytes: number
  /** How long one download may take, body included. */
  readonly timeoutMs: number
  /**
   * Tests: the transport in place of the global `fetch`; the address policy's checks still run
   * first (see `PublicFetch`).
   */
  readonly fetch?: typeof globalThis.fetch | undefined
}

export const blobKeyOf = (id: ResultId): string => `results/${id}`

const single = async function* (bytes: Uint8Array) {
  yield bytes
}

const download = (
  url: string,
  key: string,
  options: Options
): Effect.Effect<
  { readonly sizeBytes: number; readonly sha256: string },
  DownloadFailed | DownloadRefused | BlobTooLarge | StoreUnavailable,
  BlobStore
> =>
  Effect.gen(function* () {
    const blobs = yield* BlobStore
    const response = yield* PublicFetch.get(url, { fetch: options.fetch }).pipe(
      Effect.mapError((error) =>
        error._tag === "Refused"
          ? new DownloadRefused({ message: `Result link refused: ${error.message}` })
          : new DownloadFailed({ message: `Result download failed: ${error.message}`, cause: error.cause })
      )
    )
    if (!response.ok || response.body === null) {
      yield* Effect.ignore(Effect.tryPromise(() => response.body?.cancel() ?? Promise.resolve()))
      return yield* new DownloadFailed({ message: `Result download answered HTTP ${response.status}` })
    }
    const declared = Number(response.headers.get("content-length") ?? NaN)
    if (declared > options.maxBytes) {
      return yield* new BlobTooLarge({ maxBytes: options.maxBytes })
    }
    // The blob store counts what streams in and stops reading past the cap; closing the scope
    // then aborts the rest of the download.
    return yield* blobs.put(key, response.body, { maxBytes: options.maxBytes })
  }).pipe(
    Effect.scoped,
    Effect.timeoutOrElse({
      duration: options.timeoutMs,
      orElse: () => Effect.fail(new DownloadFailed({ message: `Result download took longer than ${options.timeoutMs} ms` }))
    })
  )

/**
 * Stores every output and returns the task's assets in the same order. File assets are
 * identified by their result id, text assets by a `text_` id (Ids.TextAssetId).
 */
export const store = (
  task: { readonly id: TaskId; readonly accountId: AccountId },
  outputs: ReadonlyArray<ProviderOutput>,
  options: Options
): Effect.Effect<
  ReadonlyArray<StoredAsset>,
  DownloadFailed | DownloadRefused | BlobTooLarge | StoreUnavailable,
  BlobStore | MediaStore
> =>
  Effect.gen(function* () {
    const blobs = yield* BlobStore
    const media = yield* MediaStore
    const { days } = yield* Retention.ResultRetention
    const written: Array<string> = []
    const files: Array<ResultRecord> = []
    const assets = yield* Effect.forEach(
      outputs,
      (output) =>
        Effect.gen(function* () {
          if (output.text !== undefined) {
            return {
              id: makeTextAssetId(),
              type: output.type,
              text: toStorable(output.text),
              mimeType: output.contentType,
              metadata: toStorable(output.metadata)
            } satisfies StoredAsset
          }
          const id = makeResultId()
          const key = blobKeyOf(id)
          written.push(key)
          const { sha256, sizeBytes } =
            output.bytes !== undefined
              ? yield* blobs.put(key, single(output.bytes), { maxBytes: options.maxBytes })
              : output.url !== undefined
                ? yield* download(output.url, key, options)
                : yield* new DownloadFailed({ message: "An upstream output carried no url, bytes or text" })
          const createdAt = new Date(yield* Clock.currentTimeMillis)
          files.push({
            id,
            accountId: task.accountId,
            taskId: task.id,
            contentType: output.contentType,
            sizeBytes,
            sha256,
            blobKey: key,
            createdAt,
            expiresAt: Retention.expiresAt(createdAt, days)
          })
          return {
            id,
            type: output.type,
            resultId: id,
            mimeType: output.contentType,
            metadata: toStorable(output.metadata)
          } satisfies StoredAsset
        }),
      { concurrency: 4 }
    ).pipe(Effect.onError(() => Effect.forEach(written, (key) => Effect.ignore(blobs.remove(key)), { discard: true })))
    const expiries = new Map<string, string>()
    for (const record of files) expiries.set(record.id, (yield* media.putResult(record)).toISOString())
    return assets.map((asset) => (asset.resultId === undefined ? asset : { ...asset, expiresAt: expiries.get(asset.resultId) }))
  })
