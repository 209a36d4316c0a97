/**
 * The headers that keep downloads from being run as pages and account data out of caches: a
 * GIF that is also HTML is served as an attachment under a .gif name, nosniff, sandboxed; the
 * authenticated JSON is no-store; a 401 names the Bearer scheme and realm. One store suffices:
 * the headers are the server's, not the store's.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { MediaReference, MediaUrls, ResultUrls } from "@taskmeter/kernel"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

/** A valid GIF header followed by HTML with a script: what a browser could sniff as a page. */
const POLYGLOT = Buffer.from("GIF89a\x01\x00\x01\x00\x00\x00\x00<html><script>alert(document.cookie)</script></html>", "latin1")

const expectSafeDownload = (headers: Headers, fileName: string) => {
  expect(headers.get("x-content-type-options")).toBe("nosniff")
  expect(headers.get("content-security-policy")).toBe("sandbox; default-src 'none'")
  expect(headers.get("content-disposition")).toBe(`attachment; filename="${fileName}"`)
}

layer(T.layer(stores[0]!), { excludeTestServices: true })("download and JSON headers", (it) => {
  describe("downloads", () => {
    it.effect("an uploaded GIF/HTML polyglot comes back through its media link as an attachment, nosniff, sandboxed", () =>
      Effect.gen(function* () {
        const who = yield* T.customer()
        const upload = yield* T.call("/api/v1/media", {
          method: "POST",
          headers: { ...T.bearer(who.secret), "content-type": "image/gif" },
          body: POLYGLOT
        })
        expect(upload.status).toBe(201)
        const reference = upload.body.reference as MediaReference.MediaReference
        const url = new URL(yield* (yield* MediaUrls.MediaUrls).sign(who.accountId, reference))
        const reply = yield* T.fetchBytes(`${url.pathname}${url.search}`)
        expect(reply.status).toBe(200)
        expect(reply.headers.get("content-type")).toBe("image/gif")
        expectSafeDownload(reply.headers, `media-${MediaReference.uuidOf(reference)}.gif`)
        // A range and a revalidation carry them too.
        const ranged = yield* T.fetchBytes(`${url.pathname}${url.search}`, { headers: { range: "bytes=0-5" } })
        expect(ranged.status).toBe(206)
        expectSafeDownload(ranged.headers, `media-${MediaReference.uuidOf(reference)}.gif`)
      })
    )

    it.effect("a result, by API key and by result link, is result-<id> with its type's extension", () =>
      Effect.gen(function* () {
        const who = yield* T.customer()
        const { body: task } = yield* T.submit(who)
        const { resultId, sha256 } = yield* T.succeedWithResult(who, task.id, T.PNG)
        const byKey = yield* T.fetchBytes(`/api/v1/results/${resultId}`, { headers: T.bearer(who.secret) })
        expect(byKey.status).toBe(200)
        expectSafeDownload(byKey.headers, `result-${resultId}.png`)
        expect(byKey.headers.get("cache-control")).toBe("private, max-age=3600")
        const notModified = yield* T.fetchBytes(`/api/v1/results/${resultId}`, {
          headers: { ...T.bearer(who.secret), "if-none-match": `"${sha256}"` }
        })
        expect(notModified.status).toBe(304)
        expect(notModified.headers.get("x-content-type-options")).toBe("nosniff")
        const link = yield* (yield* ResultUrls.ResultUrls).sign(who.accountId, resultId)
        const byLink = yield* T.fetchBytes(link.path)
        expect(byLink.status).toBe(200)
        expectSafeDownload(byLink.headers, `result-${resultId}.png`)
      })
    )

    it.effect("a text result is a .txt, a WAV a .wav", () =>
      Effect.gen(function* () {
        const who = yield* T.customer(100_000_000)
        for (const [contentType, extension] of [
          ["text/plain; charset=utf-8", "txt"],
          ["audio/wav", "wav"]
        ] as const) {
          const { body: task } = yield* T.submit(who)
          const { resultId } = yield* T.succeedWithResult(who, task.id, Buffer.from("RIFF...."), contentType)
          const reply = yield* T.fetchBytes(`/api/v1/results/${resultId}`, { headers: T.bearer(who.secret) })
          expect(reply.headers.get("content-disposition")).toBe(`attachment; filename="result-${resultId}.${extension}"`)
        }
      })
    )
  })

  describe("JSON", () => {
    it.effect("authenticated answers (usage, jobs, a job) are Cache-Control: no-store, nosniff", () =>
      Effect.gen(function* () {
        const who = yield* T.customer()
        const { body: task } = yield* T.submit(who)
        for (const path of ["/api/v1/usage", "/api/v1/jobs", `/api/v1/jobs/${task.id}`]) {
          const reply = yield* T.call(path, { headers: T.bearer(who.secret) })
          expect(reply.status, path).toBe(200)
          expect(reply.headers.get("cache-control"), path).toBe("no-store")
          expect(reply.headers.get("x-content-type-options"), path).toBe("nosniff")
        }
        const submitted = yield* T.submit(who)
        expect(submitted.headers.get("cache-control")).toBe("no-store")
      })
    )

    it.effect("a 401 carries WWW-Authenticate: Bearer with the realm; a 403 does not", () =>
      Effect.gen(function* () {
        for (const headers of [{}, T.bearer("tm_not-a-key"), { "x-api-key": "tm_not-a-key" }]) {
          const reply = yield* T.call("/api/v1/usage", { headers })
          expect(reply.status).toBe(401)
          expect(reply.body.code).toBe("AUTH_REQUIRED")
          expect(reply.headers.get("www-authenticate")).toBe('Bearer realm="taskmeter"')
          expect(reply.headers.get("cache-control")).toBe("no-store")
        }
        const narrow = yield* T.customer(10_000_000, { scopes: ["jobs:read"] })
        const forbidden = yield* T.call("/api/v1/usage", { headers: T.bearer(narrow.secret) })
        expect(forbidden.status).toBe(403)
        expect(forbidden.headers.get("www-authenticate")).toBe(null)
      })
    )
  })
})
