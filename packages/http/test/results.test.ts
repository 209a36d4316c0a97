import { randomBytes } from "node:crypto"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

const FILE = randomBytes(10_000)

/** A customer with a succeeded task whose one result holds FILE. */
const withResult = Effect.gen(function* () {
  const who = yield* T.customer()
  const { body: task } = yield* T.submit(who)
  const { resultId, sha256 } = yield* T.succeedWithResult(who, task.id, FILE)
  const { body: done } = yield* T.call(`/api/v1/jobs/${task.id}`, { headers: T.bearer(who.secret) })
  return { who, url: T.assetUrls(done)[0]!, resultId, etag: `"${sha256}"` }
})

const download = (who: T.Customer, url: string, headers: Record<string, string> = {}) =>
  Effect.flatMap(T.baseUrl, (base) =>
    Effect.promise(async () => {
      const response = await fetch(`${base}${url}`, { headers: { ...T.bearer(who.secret), ...headers } })
      return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) }
    })
  )

for (const store of stores) {
  layer(T.layer(store), { excludeTestServices: true })(`results over ${store.name}`, (it) => {
    describe("GET /api/v1/results/{id}", () => {
      it.effect("streams the owner's bytes with Content-Type, Content-Length and the SHA-256 as ETag", () =>
        Effect.gen(function* () {
          const { etag, url, who } = yield* withResult
          const reply = yield* download(who, url)
          expect(reply.status).toBe(200)
          expect(reply.bytes.equals(FILE)).toBe(true)
          expect(reply.headers.get("content-type")).toBe("image/png")
          expect(reply.headers.get("content-length")).toBe(String(FILE.length))
          expect(reply.headers.get("etag")).toBe(etag)
          expect(reply.headers.get("accept-ranges")).toBe("bytes")
        })
      )

      it.effect("serves one byte range with 206 and Content-Range", () =>
        Effect.gen(function* () {
          const { url, who } = yield* withResult
          const cases: Array<[string, number, number]> = [
            ["bytes=0-99", 0, 99],
            ["bytes=9990-", 9990, 9999],
            ["bytes=-10", 9990, 9999],
            ["bytes=5000-20000", 5000, 9999]
          ]
          for (const [range, start, end] of cases) {
            const reply = yield* download(who, url, { range })
            expect(reply.status, range).toBe(206)
            expect(reply.headers.get("content-range")).toBe(`bytes ${start}-${end}/${FILE.length}`)
            expect(reply.headers.get("content-length")).toBe(String(end - start + 1))
            expect(reply.bytes.equals(FILE.subarray(start, end + 1))).toBe(true)
          }
        })
      )

      it.effect("answers a range past the end with 416, Content-Range bytes */size and an error body", () =>
        Effect.gen(function* () {
          const { url, who } = yield* withResult
          const reply = yield* T.call(url, { headers: { ...T.bearer(who.secret), range: "bytes=10000-" } })
          expect(reply.status).toBe(416)
          expect(reply.headers.get("content-range")).toBe(`bytes */${FILE.length}`)
          expect(reply.body.code).toBe("INVALID_REQUEST")
          expect(reply.body.error).toContain(`${FILE.length} bytes`)
        })
      )

      it.effect("sends the whole file for ranges it does not serve (several, malformed, stale If-Range)", () =>
        Effect.gen(function* () {
          const { url, who } = yield* withResult
          const cases: Array<Record<string, string>> = [
            { range: "bytes=0-1,5-6" },
            { range: "bytes=9-2" },
            { range: "items=0-1" },
            { range: "bytes=0-1", "if-range": '"stale"' }
          ]
          for (const headers of cases) {
            const reply = yield* download(who, url, headers)
            expect(reply.status, JSON.stringify(headers)).toBe(200)
            expect(reply.bytes.length).toBe(FILE.length)
          }
        })
      )

      it.effect("answers If-None-Match with the ETag with 304", () =>
        Effect.gen(function* () {
          const { etag, url, who } = yield* withResult
          const reply = yield* download(who, url, { "if-none-match": etag })
          expect(reply.status).toBe(304)
          expect(reply.bytes.length).toBe(0)
          expect((yield* download(who, url, { "if-none-match": '"other"' })).status).toBe(200)
        })
      )

      it.effect("answers 404 JOB_NOT_FOUND for another account's result, an unknown and a malformed id", () =>
        Effect.gen(function* () {
          const { url } = yield* withResult
          const stranger = yield* T.customer()
          for (const path of [url, "/api/v1/results/00000000-0000-4000-8000-000000000000", "/api/v1/results/nope"]) {
            const reply = yield* T.call(path, { headers: T.bearer(stranger.secret) })
            expect(reply.status, path).toBe(404)
            expect(reply.body.code).toBe("JOB_NOT_FOUND")
          }
        })
      )

      it.effect("needs credentials: 401 AUTH_REQUIRED", () =>
        Effect.gen(function* () {
          const { url } = yield* withResult
          const reply = yield* T.call(url)
          expect(reply.status).toBe(401)
          expect(reply.body.code).toBe("AUTH_REQUIRED")
        })
      )
    })
  })
}
