import { createHash } from "node:crypto"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { BlobStore, Housekeeping, MediaReference, MediaStore, Retention } from "@taskmeter/kernel"
import type { Ids } from "@taskmeter/kernel"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

const MAX_UPLOAD_BYTES = 64 * 1024

const upload = (who: T.Customer, body: Uint8Array | string, contentType?: string) =>
  T.call("/api/v1/media", {
    method: "POST",
    headers: { ...T.bearer(who.secret), ...(contentType === undefined ? {} : { "content-type": contentType }) },
    body
  })

/** A file of `size` bytes starting with the PNG signature. */
const pngOfSize = (size: number) => {
  const bytes = new Uint8Array(size)
  bytes.set(T.PNG.subarray(0, 8))
  return bytes
}

const headers: Array<[string, Uint8Array]> = [
  ["image/png", T.PNG],
  ["image/jpeg", Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46])],
  ["image/gif", new TextEncoder().encode("GIF89a\u0001\u0000\u0001\u0000")],
  ["image/webp", new TextEncoder().encode("RIFF\u0024\u0000\u0000\u0000WEBPVP8 ")],
  ["video/mp4", Uint8Array.from([0, 0, 0, 0x18, ...new TextEncoder().encode("ftypmp42"), 0, 0, 0, 0])],
  ["video/quicktime", Uint8Array.from([0, 0, 0, 0x14, ...new TextEncoder().encode("ftypqt  "), 0, 0, 0, 0])],
  [
    "video/webm",
    Uint8Array.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01, 0x42, 0x82, 0x84, ...new TextEncoder().encode("webm")])
  ]
]

for (const store of stores) {
  layer(T.layer(store, { maxUploadBytes: MAX_UPLOAD_BYTES }), { excludeTestServices: true })(`media over ${store.name}`, (it) => {
    describe("POST /api/v1/media", () => {
      it.effect("stores an image and answers 201 with its reference, which a submission then accepts", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const reply = yield* upload(who, T.PNG, "image/png")
          expect(reply.status).toBe(201)
          expect(reply.body).toEqual({
            reference: expect.stringMatching(/^media:[0-9a-f-]{36}$/),
            contentType: "image/png",
            sizeBytes: T.PNG.byteLength,
            sha256: createHash("sha256").update(T.PNG).digest("hex"),
            createdAt: expect.any(String),
            expiresAt: Retention.expiresAt(new Date(reply.body.createdAt), Retention.DEFAULT_DAYS).toISOString()
          })
          const record = yield* (yield* MediaStore.MediaStore).getMedia(who.accountId, reply.body.reference)
          const bytes = yield* (yield* BlobStore.BlobStore).read(record!.blobKey)
          const chunks: Array<Uint8Array> = []
          yield* Effect.promise(async () => {
            for await (const chunk of bytes!) chunks.push(chunk)
          })
          expect(Buffer.concat(chunks).equals(T.PNG)).toBe(true)
          const submitted = yield* T.submit(who, {
            model: T.MEDIA_MODEL,
            input: { prompt: "make it blue", imageUrls: [reply.body.reference] }
          })
          expect(submitted.status).toBe(202)
        })
      )

      it.effect("accepts each supported format whose bytes match its Content-Type", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          for (const [contentType, bytes] of headers) {
            const reply = yield* upload(who, bytes, `${contentType}; name=x`)
            expect(reply.status, contentType).toBe(201)
            expect(reply.body.contentType).toBe(contentType)
          }
        })
      )

      it.effect("refuses bytes that are not the declared type: 400 INVALID_REQUEST", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const jpeg = headers[1]![1]
          const mismatched = yield* upload(who, jpeg, "image/png")
          expect(mismatched.status).toBe(400)
          expect(mismatched.body.code).toBe("INVALID_REQUEST")
          expect(mismatched.body.error).toContain("image/jpeg")
          const text = yield* upload(who, "just some text, not an image", "image/gif")
          expect(text.status).toBe(400)
          const matroska = Uint8Array.from([
            0x1a,
            0x45,
            0xdf,
            0xa3,
            0x9f,
            0x42,
            0x82,
            0x88,
            ...new TextEncoder().encode("matroska")
          ])
          expect((yield* upload(who, matroska, "video/webm")).status).toBe(400)
        })
      )

      it.effect("refuses other content types and an empty body: 400 INVALID_REQUEST", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          for (const contentType of ["image/svg+xml", "application/octet-stream", "text/plain"]) {
            const reply = yield* upload(who, T.PNG, contentType)
            expect(reply.status, contentType).toBe(400)
            expect(reply.body.code).toBe("INVALID_REQUEST")
            expect(reply.body.error).toContain("image/png")
          }
          const empty = yield* upload(who, new Uint8Array(0), "image/png")
          expect(empty.status).toBe(400)
          expect(empty.body.error).toContain("empty")
        })
      )

      it.effect("refuses a file over the configured cap: 413 INPUT_TOO_LARGE, declared or streamed", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          expect((yield* upload(who, pngOfSize(MAX_UPLOAD_BYTES), "image/png")).status).toBe(201)
          const declared = yield* upload(who, pngOfSize(MAX_UPLOAD_BYTES + 1), "image/png")
          expect(declared.status).toBe(413)
          expect(declared.body.code).toBe("INPUT_TOO_LARGE")
          const bytes = pngOfSize(MAX_UPLOAD_BYTES * 2)
          const streamed = yield* T.call("/api/v1/media", {
            method: "POST",
            headers: { ...T.bearer(who.secret), "content-type": "image/png" },
            body: new ReadableStream({
              start(controller) {
                for (let i = 0; i < bytes.length; i += 8 * 1024) controller.enqueue(bytes.subarray(i, i + 8 * 1024))
                controller.close()
              }
            }),
            duplex: "half"
          } as RequestInit)
          expect(streamed.status).toBe(413)
          expect(streamed.body.code).toBe("INPUT_TOO_LARGE")
        })
      )

      it.effect("refuses a submission naming an expired upload with 400 MEDIA_EXPIRED; housekeeping removes its file", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const media = yield* MediaStore.MediaStore
          const blobs = yield* BlobStore.BlobStore
          const reference = MediaReference.make()
          const blobKey = `media/${MediaReference.uuidOf(reference)}`
          const written = yield* blobs.put(
            blobKey,
            (async function* () {
              yield T.PNG
            })(),
            { maxBytes: T.PNG.byteLength }
          )
          // Uploaded longer ago than the retention.
          const createdAt = new Date(Date.now() - (Retention.DEFAULT_DAYS + 1) * 24 * 3600 * 1000)
          yield* media.putMedia({
            reference,
            accountId: who.accountId as Ids.AccountId,
            contentType: "image/png",
            sizeBytes: written.sizeBytes,
            sha256: written.sha256,
            blobKey,
            createdAt,
            expiresAt: Retention.expiresAt(createdAt, Retention.DEFAULT_DAYS)
          })
          const reply = yield* T.submit(who, {
            model: T.MEDIA_MODEL,
            input: { prompt: "make it blue", imageUrls: [reference] }
          })
          expect(reply.status).toBe(400)
          expect(reply.body.code).toBe("MEDIA_EXPIRED")
          expect(reply.body.error).toContain(`imageUrls[0]: ${reference} expired`)
          expect((yield* Housekeeping.removeExpiredFiles()).media.removed).toBeGreaterThanOrEqual(1)
          expect(yield* blobs.size(blobKey)).toBeUndefined()
        })
      )

      it.effect("keeps uploads private: another account cannot use the reference", () =>
        Effect.gen(function* () {
          const owner = yield* T.customer()
          const { body } = yield* upload(owner, T.PNG, "image/png")
          const reply = yield* T.submit(yield* T.customer(), {
            model: T.MEDIA_MODEL,
            input: { prompt: "make it blue", imageUrls: [body.reference] }
          })
          expect(reply.status).toBe(400)
          expect(reply.body.code).toBe("INVALID_MODEL_INPUT")
          const stranger = yield* T.customer()
          const record = yield* (yield* MediaStore.MediaStore).getMedia(
            stranger.accountId as Ids.AccountId,
            body.reference as MediaReference.MediaReference
          )
          expect(record).toBeUndefined()
        })
      )
    })
  })
}
