import { afterAll, afterEach, beforeAll, describe, expect, it } from "@effect/vitest"
import { StoreError } from "@taskmeter/kernel"
import { S3BlobStore, S3Client } from "@taskmeter/storage-s3"
import { LocalS3 } from "@taskmeter/storage-s3/testing"
import { Effect } from "effect"
import { HttpResponse, http, passthrough } from "msw"
import { setupServer } from "msw/node"

// msw in front of the local S3 server: what it does not answer goes through.
let server: LocalS3.LocalS3
const upstream = setupServer()
beforeAll(async () => {
  server = await LocalS3.start()
  upstream.listen({ onUnhandledFrame: "bypass" })
})
afterEach(() => upstream.resetHandlers())
afterAll(async () => {
  upstream.close()
  await server.close()
})

const MiB = 1024 * 1024

const store = () =>
  S3BlobStore.make({
    client: S3Client.make(server.settings, { credentials: LocalS3.credentials }),
    bucket: server.bucket,
    prefix: "throttled/"
  })

async function* body(size: number): AsyncIterable<Uint8Array> {
  yield new Uint8Array(size).fill(7)
}

const slowDown = () =>
  new HttpResponse(
    '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>',
    { status: 503, headers: { "content-type": "application/xml" } }
  )

describe("storage-s3 behind a throttling proxy", () => {
  it.live("503 SlowDown is retried with backoff and the put succeeds; a store that keeps throttling is StoreUnavailable", () =>
    Effect.gen(function* () {
      let refused = 0
      upstream.use(
        http.put(`${server.endpoint}/${server.bucket}/throttled/media/throttled`, () =>
          refused++ < 2 ? slowDown() : passthrough()
        )
      )
      const blobs = store()
      const written = yield* blobs.put("media/throttled", body(MiB), { maxBytes: MiB })
      expect(written.sizeBytes).toBe(MiB)
      expect(refused).toBe(3)
      expect(yield* blobs.size("media/throttled")).toBe(MiB)

      let attempts = 0
      upstream.use(
        http.get(`${server.endpoint}/${server.bucket}/throttled/media/throttled`, () => {
          attempts++
          return slowDown()
        })
      )
      expect(yield* Effect.flip(blobs.read("media/throttled"))).toBeInstanceOf(StoreError.StoreUnavailable)
      expect(attempts).toBe(S3Client.DEFAULT_MAX_ATTEMPTS)
    })
  )

  it.live("removeMany sends DeleteObjects calls of at most 1,000 keys", () =>
    Effect.gen(function* () {
      const calls: Array<number> = []
      upstream.use(
        http.post(`${server.endpoint}/${server.bucket}`, async ({ request }) => {
          calls.push(((await request.clone().text()).match(/<Key>/g) ?? []).length)
          return passthrough()
        })
      )
      const blobs = store()
      const kept = ["results/0", "results/1500", "results/2400"]
      for (const key of kept) yield* blobs.put(key, body(10), { maxBytes: 10 })
      yield* blobs.removeMany(Array.from({ length: 2_500 }, (_, i) => `results/${i}`))
      expect(calls).toEqual([1_000, 1_000, 500])
      for (const key of kept) expect(yield* blobs.size(key)).toBeUndefined()
    })
  )
})
