/**
 * `taskmeter admin blobs copy --to s3`: copies the files of DATA_DIR/blobs into the S3_BUCKET
 * (under S3_PREFIX) with the server's BlobStore, four at a time. Idempotent and resumable: a key
 * already in the bucket with the file's size is skipped (a put is all or nothing, so such an
 * object is a finished copy). Files are never removed here.
 */
import { createReadStream } from "node:fs"
import { readdir, stat } from "node:fs/promises"
import { join, relative, sep } from "node:path"
import { Data, Effect, Option } from "effect"
import { BlobStore } from "@taskmeter/kernel"
import { S3Settings, S3Store, StartupCheck } from "@taskmeter/storage-s3"

export interface Summary {
  readonly files: number
  readonly copied: number
  readonly skipped: number
  readonly failed: ReadonlyArray<{ readonly key: string; readonly message: string }>
  readonly bytesCopied: number
}

interface File {
  readonly key: string
  readonly path: string
  readonly sizeBytes: number
}

/** The blob files under `root`, as keys; a FileSystem store's unfinished `*.partial` writes left out. */
export const filesOf = (root: string): Effect.Effect<ReadonlyArray<File>> =>
  Effect.promise(async () => {
    const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => [])
    const files = await Promise.all(
      entries
        .filter((entry) => entry.isFile() && !entry.name.endsWith(".partial"))
        .map(async (entry) => {
          const path = join(entry.parentPath, entry.name)
          return { key: relative(root, path).split(sep).join("/"), path, sizeBytes: (await stat(path)).size }
        })
    )
    return files.sort((a, b) => a.key.localeCompare(b.key))
  })

const progressLine = (done: number, total: number, bytes: number): string => {
  const width = 30
  const filled = total === 0 ? width : Math.round((done / total) * width)
  return `\r[${"#".repeat(filled)}${".".repeat(width - filled)}] ${done}/${total} files, ${(bytes / 1e6).toFixed(1)} MB copied`
}

/** Copies every file of `root` not yet in `blobs`; `onProgress` after each file. */
export const copy = (
  root: string,
  onProgress: (done: number, total: number, bytesCopied: number) => Effect.Effect<void>
): Effect.Effect<Summary, never, BlobStore.BlobStore> =>
  Effect.gen(function* () {
    const blobs = yield* BlobStore.BlobStore
    const files = yield* filesOf(root)
    let done = 0
    let copied = 0
    let skipped = 0
    let bytesCopied = 0
    const failed: Array<{ key: string; message: string }> = []
    yield* onProgress(0, files.length, 0)
    yield* Effect.forEach(
      files,
      (file) =>
        Effect.gen(function* () {
          if ((yield* blobs.size(file.key)) === file.sizeBytes) {
            skipped++
          } else {
            yield* blobs.put(file.key, createReadStream(file.path), { maxBytes: Number.MAX_SAFE_INTEGER })
            copied++
            bytesCopied += file.sizeBytes
          }
        }).pipe(
          Effect.catch((error) => Effect.sync(() => void failed.push({ key: file.key, message: error.message }))),
          Effect.andThen(Effect.suspend(() => onProgress(++done, files.length, bytesCopied)))
        ),
      { concurrency: 4, discard: true }
    )
    return { files: files.length, copied, skipped, failed, bytesCopied }
  })

export class NoBucket extends Data.TaggedError("NoBucket")<{ readonly message: string }> {}

/** The command: S3 from the environment (checked first); a progress bar on a terminal's stderr unless `json`. */
export const run = (dataDir: string, json: boolean): Effect.Effect<Summary, StartupCheck.S3NotReady | NoBucket> =>
  Effect.gen(function* () {
    const settings = yield* S3Settings.config.pipe(Effect.orElseSucceed(() => Option.none<S3Settings.S3Settings>()))
    if (Option.isNone(settings)) {
      return yield* new NoBucket({
        message: "Set S3_BUCKET (and S3_PREFIX, S3_ENDPOINT, S3_REGION as the servers have them) to copy into S3."
      })
    }
    const bar = !json && process.stderr.isTTY === true
    const summary = yield* copy(join(dataDir, "blobs"), (done, total, bytes) =>
      bar ? Effect.sync(() => void process.stderr.write(progressLine(done, total, bytes))) : Effect.void
    ).pipe(Effect.provide(S3Store.layer(settings.value)))
    if (bar) process.stderr.write("\n")
    return summary
  })
