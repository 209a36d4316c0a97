/**
 * Storage port for bytes: uploaded media and result files. Bodies stream in and out as
 * async iterables of chunks, so a 100 MB video never sits in memory whole.
 *
 * `layerFileSystem(dir)` keeps blobs as files under the data directory, written to a temporary
 * name and renamed into place so a reader never sees half a file.
 */
import { createHash, randomUUID } from "node:crypto"
import { createReadStream, createWriteStream } from "node:fs"
import { mkdir, rename, rm, stat } from "node:fs/promises"
import { dirname, join } from "node:path"
import { Data, Effect, Layer } from "effect"
import { Context } from "effect"
import { StoreUnavailable } from "../domain/StoreError.ts"

export class BlobTooLarge extends Data.TaggedError("BlobTooLarge")<{ readonly maxBytes: number }> {}

/** Inclusive byte range, as in HTTP Range. */
export interface ByteRange {
  readonly start: number
  readonly end: number
}

export interface Written {
  readonly sizeBytes: number
  /** Lower-case hex SHA-256 of the bytes. */
  readonly sha256: string
}

export class BlobStore extends Context.Service<
  BlobStore,
  {
    /** Stores the body under `key`, refusing (and keeping nothing) past `maxBytes`. */
    readonly put: (
      key: string,
      body: AsyncIterable<Uint8Array>,
      options: { readonly maxBytes: number }
    ) => Effect.Effect<Written, BlobTooLarge | StoreUnavailable>
    readonly size: (key: string) => Effect.Effect<number | undefined, StoreUnavailable>
    /** The bytes of `key` (or of `range` within it); undefined when there is no such blob. */
    readonly read: (key: string, range?: ByteRange) => Effect.Effect<AsyncIterable<Uint8Array> | undefined, StoreUnavailable>
    readonly remove: (key: string) => Effect.Effect<void, StoreUnavailable>
    /** Removes every key given, missing ones included, in calls of a bounded size (S3: 1,000 keys). */
    readonly removeMany: (keys: ReadonlyArray<string>) => Effect.Effect<void, StoreUnavailable>
  }
>()("@taskmeter/kernel/BlobStore") {}

const SAFE_KEY = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/

const pathOf = (root: string, key: string): string => {
  if (!SAFE_KEY.test(key) || key.split("/").includes("..")) {
    throw new Error(`Unsafe blob key: ${key}`)
  }
  return join(root, key)
}

const unavailable = (action: string) => (cause: unknown) =>
  new StoreUnavailable({ message: `Blob store could not ${action}`, cause })

const isMissing = (cause: unknown): boolean =>
  typeof cause === "object" && cause !== null && "code" in cause && cause.code === "ENOENT"

export const makeFileSystem = (root: string): BlobStore["Service"] =>
  BlobStore.of({
    put: (key, body, { maxBytes }) =>
      Effect.tryPromise({
        try: async () => {
          const target = pathOf(root, key)
          await mkdir(dirname(target), { recursive: true })
          const temporary = `${target}.${randomUUID()}.partial`
          const hash = createHash("sha256")
          const out = createWriteStream(temporary)
          let sizeBytes = 0
          try {
            for await (const chunk of body) {
              sizeBytes += chunk.byteLength
              if (sizeBytes > maxBytes) throw new BlobTooLarge({ maxBytes })
              hash.update(chunk)
              if (!out.write(chunk)) await new Promise<void>((resolve) => out.once("drain", () => resolve()))
            }
            await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())))
            await rename(temporary, target)
          } catch (error) {
            out.destroy()
            await rm(temporary, { force: true })
            throw error
          }
          return { sizeBytes, sha256: hash.digest("hex") }
        },
        catch: (cause) => (cause instanceof BlobTooLarge ? cause : unavailable("write")(cause))
      }),
    size: (key) =>
      Effect.tryPromise({
        try: () =>
          stat(pathOf(root, key)).then(
            (s) => s.size,
            (e) => (isMissing(e) ? undefined : Promise.reject(e))
          ),
        catch: unavailable("stat")
      }),
    read: (key, range) =>
      Effect.tryPromise({
        try: async () => {
          const path = pathOf(root, key)
          const exists = await stat(path).then(
            () => true,
            (e) => (isMissing(e) ? false : Promise.reject(e))
          )
          if (!exists) return undefined
          return createReadStream(path, range === undefined ? {} : { start: range.start, end: range.end })
        },
        catch: unavailable("read")
      }),
    remove: (key) => Effect.tryPromise({ try: () => rm(pathOf(root, key), { force: true }), catch: unavailable("remove") }),
    removeMany: (keys) =>
      Effect.tryPromise({
        try: async () => {
          for (const key of keys) await rm(pathOf(root, key), { force: true })
        },
        catch: unavailable("remove")
      })
  })

export const layerFileSystem = (root: string): Layer.Layer<BlobStore> => Layer.succeed(BlobStore, makeFileSystem(root))
