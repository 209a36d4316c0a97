/**
 * The kernel's BlobStore on an S3-compatible bucket: puts stream out as parts (`internal/Upload`),
 * reads stream in (a range as the Range header), a missing key is `undefined`, removals go in
 * DeleteObjects calls of at most 1,000 keys. Every S3 failure, once the client's retries are
 * spent, is StoreUnavailable; `layer` checks the bucket first (StartupCheck).
 */
import { Readable } from "node:stream"
import { DeleteObjectCommand, DeleteObjectsCommand, GetObjectCommand, HeadObjectCommand, type S3Client } from "@aws-sdk/client-s3"
import { BlobStore, StoreError } from "@taskmeter/kernel"
import { Effect, Layer } from "effect"
import { isMissingKey, unavailable } from "./internal/S3Errors.ts"
import { upload } from "./internal/Upload.ts"

export interface Options {
  readonly client: S3Client
  readonly bucket: string
  /** Put before every key: "" or a path ending in "/". */
  readonly prefix: string
  /** Bytes per multipart part (at least 5 MiB, S3's minimum). Default 8 MiB. */
  readonly partSizeBytes?: number
}

export const DEFAULT_PART_SIZE_BYTES = 8 * 1024 * 1024

/** Keys one DeleteObjects call takes at most. */
export const DELETE_BATCH = 1_000

const orUndefined = <A>(promise: Promise<A>): Promise<A | undefined> =>
  promise.catch((cause) => (isMissingKey(cause) ? undefined : Promise.reject(cause)))

export const make = ({
  bucket,
  client,
  partSizeBytes = DEFAULT_PART_SIZE_BYTES,
  prefix
}: Options): BlobStore.BlobStore["Service"] => {
  const keyOf = (key: string) => `${prefix}${key}`
  return BlobStore.BlobStore.of({
    put: (key, body, { maxBytes }) =>
      Effect.tryPromise({
        try: () => upload({ client, bucket, key: keyOf(key), partSizeBytes }, body, maxBytes),
        catch: (cause) => (cause instanceof BlobStore.BlobTooLarge ? cause : unavailable(`store ${key}`)(cause))
      }),
    size: (key) =>
      Effect.tryPromise({
        try: () =>
          orUndefined(client.send(new HeadObjectCommand({ Bucket: bucket, Key: keyOf(key) }))).then(
            (head) => head?.ContentLength
          ),
        catch: unavailable(`size ${key}`)
      }),
    read: (key, range) =>
      Effect.tryPromise({
        try: async () => {
          const object = await orUndefined(
            client.send(
              new GetObjectCommand({
                Bucket: bucket,
                Key: keyOf(key),
                ...(range === undefined ? {} : { Range: `bytes=${range.start}-${range.end}` })
              })
            )
          )
          if (object === undefined) return undefined
          if (!(object.Body instanceof Readable)) throw new Error("GetObject answered no readable body")
          return object.Body
        },
        catch: unavailable(`read ${key}`)
      }),
    remove: (key) =>
      Effect.tryPromise({
        try: () => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: keyOf(key) })),
        catch: unavailable(`remove ${key}`)
      }).pipe(Effect.asVoid),
    removeMany: (keys) =>
      Effect.forEach(
        Array.from({ length: Math.ceil(keys.length / DELETE_BATCH) }, (_, i) =>
          keys.slice(i * DELETE_BATCH, (i + 1) * DELETE_BATCH)
        ),
        (batch) =>
          Effect.tryPromise({
            try: () =>
              client.send(
                new DeleteObjectsCommand({
                  Bucket: bucket,
                  Delete: { Objects: batch.map((key) => ({ Key: keyOf(key) })), Quiet: true }
                })
              ),
            catch: unavailable(`remove ${batch.length} objects`)
          }).pipe(
            Effect.flatMap(({ Errors }) =>
              Errors === undefined || Errors.length === 0
                ? Effect.void
                : Effect.fail(
                    new StoreError.StoreUnavailable({
                      message: `S3 could not remove ${Errors.length} of ${batch.length} objects (${Errors[0]?.Code ?? "error"})`
                    })
                  )
            )
          ),
        { discard: true }
      )
  })
}

export const layer = (options: Options): Layer.Layer<BlobStore.BlobStore> => Layer.succeed(BlobStore.BlobStore, make(options))
