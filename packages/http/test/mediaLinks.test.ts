import { randomBytes, randomUUID } from "node:crypto"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { BlobStore, MediaReference, MediaStore, MediaUrls, Retention } from "@taskmeter/kernel"
import type { Ids } from "@taskmeter/kernel"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

/** A PNG signature and header followed by random bytes: an accepted upload, big enough for ranges. */
const FILE = Buffer.concat([T.PNG, randomBytes(5_000)])

const HOUR_MS = 60 * 60 * 1000

interface Uploaded {
  readonly who: T.Customer
  readonly reference: MediaReference.MediaReference
  readonly sha256: string
}

/** A customer who uploaded FILE through POST /api/v1/media. */
const withUpload = Effect.gen(function* () {
  const who = yield* T.customer()
  const reply = yield* T.call("/api/v1/media", {
    method: "POST",
    headers: { ...T.bearer(who.secret), "content-type": "image/png" },
    body: FILE
  })
  expect(reply.status).toBe(201)
  return { who, reference: reply.body.reference, sha256: reply.body.sha256 } satisfies Uploaded
})

/** The path and query of a link signed with the server's secret (or another), valid until `expiresAt`. */
const linkTo = (
  accountId: Ids.AccountId,
  reference: MediaReference.MediaReference,
  expiresAt = new Date(Date.now() + HOUR_MS),
  secret = T.MEDIA_LINKS.secret
) => MediaUrls.signedPath(secret, accountId, reference, expiresAt)

/** Asserts the one answer every link that does not work gets. */
const expectNotFound = (pathAndQuery: string) =>
  Effect.gen(function* () {
    const reply = yield* T.call(pathAndQuery)
    expect(reply.status, pathAndQuery).toBe(404)
    expect(reply.body).toEqual({ code: "JOB_NOT_FOUND", error: expect.stringContaining("media link") })
  })

for (const store of stores) {
  layer(T.layer(store), { excludeTestServices: true })(`media links over ${store.name}`, (it) => {
    describe("GET /api/v1/media-links/{uuid}", () => {
      it.effect("serves the upload behind the link MediaUrls signs for it, with no API key", () =>
        Effect.gen(function* () {
          const { reference, sha256, who } = yield* withUpload
          const signed = yield* (yield* MediaUrls.MediaUrls).sign(who.accountId, reference)
          const url = new URL(signed)
          expect(url.origin).toBe(T.MEDIA_LINKS.baseUrl)
          expect(url.pathname).toBe(`/api/v1/media-links/${MediaReference.uuidOf(reference)}`)
          const reply = yield* T.fetchBytes(`${url.pathname}${url.search}`)
          expect(reply.status).toBe(200)
          expect(reply.bytes.equals(FILE)).toBe(true)
          expect(reply.headers.get("content-type")).toBe("image/png")
          expect(reply.headers.get("content-length")).toBe(String(FILE.length))
          expect(reply.headers.get("etag")).toBe(`"${sha256}"`)
          expect(reply.headers.get("accept-ranges")).toBe("bytes")
          const maxAge = Number(/^private, max-age=(\d+)$/.exec(reply.headers.get("cache-control") ?? "")?.[1])
          expect(maxAge).toBeGreaterThan(3_590)
          expect(maxAge).toBeLessThanOrEqual(3_600)
        })
      )

      it.effect("answers a valid link to an upload past its retention like an unknown one", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const reference = MediaReference.make()
          const createdAt = new Date(Date.now() - (Retention.DEFAULT_DAYS + 1) * 24 * HOUR_MS)
          const blobKey = `media/${MediaReference.uuidOf(reference)}`
          // The bytes are still there (no housekeeping pass yet): the expiry alone refuses them.
          const written = yield* BlobStore.BlobStore.use((blobs) =>
            blobs.put(
              blobKey,
              (async function* () {
                yield FILE
              })(),
              { maxBytes: FILE.length }
            )
          )
          yield* MediaStore.MediaStore.use((media) =>
            media.putMedia({
              reference,
              accountId: who.accountId as Ids.AccountId,
              contentType: "image/png",
              sizeBytes: written.sizeBytes,
              sha256: written.sha256,
              blobKey,
              createdAt,
              expiresAt: Retention.expiresAt(createdAt, Retention.DEFAULT_DAYS)
            })
          )
          yield* expectNotFound(linkTo(who.accountId as Ids.AccountId, reference))
        })
      )

      it.effect("keeps the link's Cache-Control within the time the link has left", () =>
        Effect.gen(function* () {
          const { reference, who } = yield* withUpload
          const reply = yield* T.fetchBytes(linkTo(who.accountId, reference, new Date(Date.now() + 120_000)))
          expect(reply.status).toBe(200)
          const maxAge = Number(/max-age=(\d+)/.exec(reply.headers.get("cache-control") ?? "")?.[1])
          expect(maxAge).toBeGreaterThan(110)
          expect(maxAge).toBeLessThanOrEqual(120)
        })
      )

      it.effect("serves one byte range with 206, and answers a range past the end with 416", () =>
        Effect.gen(function* () {
          const { reference, who } = yield* withUpload
          const link = linkTo(who.accountId, reference)
          const partial = yield* T.fetchBytes(link, { headers: { range: "bytes=100-1099" } })
          expect(partial.status).toBe(206)
          expect(partial.headers.get("content-range")).toBe(`bytes 100-1099/${FILE.length}`)
          expect(partial.headers.get("content-length")).toBe("1000")
          expect(partial.bytes.equals(FILE.subarray(100, 1100))).toBe(true)
          const tail = yield* T.fetchBytes(link, { headers: { range: "bytes=-10" } })
          expect(tail.bytes.equals(FILE.subarray(FILE.length - 10))).toBe(true)
          const outside = yield* T.call(link, { headers: { range: `bytes=${FILE.length}-` } })
          expect(outside.status).toBe(416)
          expect(outside.headers.get("content-range")).toBe(`bytes */${FILE.length}`)
          expect(outside.body.code).toBe("INVALID_REQUEST")
        })
      )

      it.effect("answers HEAD with the headers alone, and If-None-Match with 304", () =>
        Effect.gen(function* () {
          const { reference, sha256, who } = yield* withUpload
          const link = linkTo(who.accountId, reference)
          const head = yield* T.fetchBytes(link, { method: "HEAD" })
          expect(head.status).toBe(200)
          expect(head.headers.get("content-length")).toBe(String(FILE.length))
          expect(head.headers.get("content-type")).toBe("image/png")
          expect(head.bytes.length).toBe(0)
          const cached = yield* T.fetchBytes(link, { headers: { "if-none-match": `"${sha256}"` } })
          expect(cached.status).toBe(304)
          expect(cached.bytes.length).toBe(0)
        })
      )

      it.effect("answers 404 to a link expiring further than the TTL from now, though signed (under a longer TTL)", () =>
        Effect.gen(function* () {
          const { reference, who } = yield* withUpload
          yield* expectNotFound(linkTo(who.accountId, reference, new Date(Date.now() + 3 * HOUR_MS)))
        })
      )

      it.effect("serves a link signed with the previous secret (a rotation); links of other secrets stay 404", () =>
        Effect.gen(function* () {
          const { reference, who } = yield* withUpload
          expect((yield* T.fetchBytes(linkTo(who.accountId, reference, undefined, T.PREVIOUS_LINK_SECRET))).status).toBe(200)
          yield* expectNotFound(linkTo(who.accountId, reference, undefined, Redacted.make("y".repeat(40))))
        })
      )

      it.effect("answers an expired link 404", () =>
        Effect.gen(function* () {
          const { reference, who } = yield* withUpload
          yield* expectNotFound(linkTo(who.accountId, reference, new Date(Date.now() - 1_000)))
        })
      )

      it.effect("answers a link whose signature, expiry, uuid or account was altered 404", () =>
        Effect.gen(function* () {
          const { reference, who } = yield* withUpload
          const other = yield* T.customer()
          const link = linkTo(who.accountId, reference)
          for (const altered of T.alterationsOf(link, other.accountId)) yield* expectNotFound(altered)
          yield* expectNotFound(link.replace(MediaReference.uuidOf(reference), randomUUID()))
          yield* expectNotFound(linkTo(who.accountId, reference, undefined, Redacted.make("x".repeat(40))))
          // The untouched link still works: the 404s above are the alterations'.
          expect((yield* T.fetchBytes(link)).status).toBe(200)
        })
      )

      it.effect("answers 404 for a validly signed link naming another account, with the same uuid", () =>
        Effect.gen(function* () {
          const { reference } = yield* withUpload
          const other = yield* T.customer()
          yield* expectNotFound(linkTo(other.accountId, reference))
        })
      )

      it.effect("answers 404 for a validly signed link to an upload that does not exist", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          yield* expectNotFound(linkTo(who.accountId, MediaReference.make()))
        })
      )
    })
  })
}
