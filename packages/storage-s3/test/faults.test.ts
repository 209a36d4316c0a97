import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { BlobStore, StoreError } from "@taskmeter/kernel"
import { S3BlobStore, S3Client, S3Store } from "@taskmeter/storage-s3"
import { LocalS3 } from "@taskmeter/storage-s3/testing"
import { Effect, Layer } from "effect"

const MiB = 1024 * 1024
const PART = 5 * MiB

let server: LocalS3.LocalS3
beforeAll(async () => {
  server = await LocalS3.start()
})
afterAll(() => server.close())

const store = (maxAttempts = S3Client.DEFAULT_MAX_ATTEMPTS) =>
  S3BlobStore.make({
    client: S3Client.make(server.settings, { credentials: LocalS3.credentials, maxAttempts }),
    bucket: server.bucket,
    prefix: "faults/",
    partSizeBytes: PART
  })

/** `total` bytes in 1 MiB chunks; `afterFirstPart` runs once a part's worth has been handed over. */
async function* body(total: number, afterFirstPart?: () => Promise<void>): AsyncIterable<Uint8Array> {
  for (let sent = 0; sent < total; sent += MiB) {
    if (sent === PART + MiB && afterFirstPart !== undefined) await afterFirstPart()
    yield new Uint8Array(Math.min(MiB, total - sent)).fill(sent / MiB)
  }
}

describe("storage-s3 under faults", () => {
  it.live("a multipart upload past maxBytes is refused, aborted and leaves nothing", () =>
    Effect.gen(function* () {
      const blobs = store()
      const error = yield* Effect.flip(blobs.put("media/big", body(13 * MiB), { maxBytes: 12 * MiB }))
      expect(error).toBeInstanceOf(BlobStore.BlobTooLarge)
      expect(yield* blobs.size("media/big")).toBeUndefined()
      expect(yield* Effect.promise(server.incompleteUploads)).toBe(0)
    })
  )

  it.live("a body that fails after parts went out aborts the upload: no object, no parts", () =>
    Effect.gen(function* () {
      const blobs = store()
      const error = yield* Effect.flip(
        blobs.put(
          "media/cut",
          body(12 * MiB, () => Promise.reject(new Error("client went away"))),
          { maxBytes: 100 * MiB }
        )
      )
      expect(error).toBeInstanceOf(StoreError.StoreUnavailable)
      expect(yield* blobs.size("media/cut")).toBeUndefined()
      expect(yield* Effect.promise(server.incompleteUploads)).toBe(0)
    })
  )

  it.live("the server stopped mid-upload: StoreUnavailable once the retries are spent, and no object", () =>
    Effect.gen(function* () {
      const blobs = store(2)
      const error = yield* Effect.flip(blobs.put("media/stopped", body(16 * MiB, server.pause), { maxBytes: 100 * MiB }))
      expect(error).toBeInstanceOf(StoreError.StoreUnavailable)
      yield* Effect.promise(server.resume)
      expect(yield* blobs.size("media/stopped")).toBeUndefined()
      expect(yield* blobs.read("media/stopped")).toBeUndefined()
    })
  )
})

describe("storage-s3 at start", () => {
  const startWith = (
    settings: typeof server.settings,
    credentials: { readonly accessKeyId: string; readonly secretAccessKey: string } = LocalS3.credentials
  ) => Effect.flip(Layer.build(S3Store.layer(settings, { credentials, maxAttempts: 1 })).pipe(Effect.scoped))

  it.live("a missing bucket or refused credentials fail the start with what to fix", () =>
    Effect.gen(function* () {
      const missing = yield* startWith({ ...server.settings, bucket: "no-such-bucket" })
      expect(missing.message).toBe(
        `S3 bucket no-such-bucket at ${server.endpoint} does not exist: create it, or fix S3_BUCKET, S3_ENDPOINT or S3_REGION.`
      )
      const refused = yield* startWith(server.settings, { accessKeyId: "UNKNOWN", secretAccessKey: "wrong" })
      expect(refused.message).toMatch(/^S3 bucket taskmeter-test at .* refused access \(InvalidAccessKeyId\): the credentials/)
    })
  )

  it.live("a reachable bucket passes the check and leaves no check object behind", () =>
    Effect.gen(function* () {
      yield* Layer.build(S3Store.layer(server.settings, { credentials: LocalS3.credentials })).pipe(Effect.scoped)
      expect(yield* Effect.promise(() => server.objectKeys(".taskmeter-check/"))).toEqual([])
    })
  )
})
