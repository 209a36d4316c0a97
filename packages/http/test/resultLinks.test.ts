import { randomBytes } from "node:crypto"
import { describe, expect, it, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Redacted } from "effect"
import { Ids, type MediaReference, MediaUrls, ResultUrls } from "@taskmeter/kernel"
import * as Main from "../src/main.ts"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

/** A PNG header followed by random bytes: a result big enough for ranges. */
const FILE = Buffer.concat([T.PNG, randomBytes(5_000)])

const HOUR_MS = 60 * 60 * 1000

/** A customer with a succeeded task whose one result holds FILE. */
const withResult = Effect.gen(function* () {
  const who = yield* T.customer()
  const submitted = yield* T.submit(who)
  expect(submitted.status).toBe(202)
  const { resultId, sha256 } = yield* T.succeedWithResult(who, submitted.body.id, FILE)
  return { who, resultId, sha256 }
})

/** The path and query of a link signed with the server's secret (or another), valid until `expiresAt`. */
const linkTo = (
  accountId: Ids.AccountId,
  resultId: Ids.ResultId,
  expiresAt = new Date(Date.now() + HOUR_MS),
  secret = T.MEDIA_LINKS.secret
) => ResultUrls.signedPath(secret, accountId, resultId, expiresAt)

const NOT_FOUND = {
  code: "JOB_NOT_FOUND",
  error:
    "Nothing is served at this result link: it is unknown, altered or expired. Ask for the task again (get_task) for a fresh link."
}

/** Asserts the one answer every link that does not work gets. */
const expectNotFound = (pathAndQuery: string) =>
  Effect.gen(function* () {
    const reply = yield* T.call(pathAndQuery)
    expect(reply.status, pathAndQuery).toBe(404)
    expect(reply.body, pathAndQuery).toEqual(NOT_FOUND)
  })

const HEADERS = ["content-type", "content-length", "etag", "accept-ranges", "content-range"]

for (const store of stores) {
  layer(T.layer(store), { excludeTestServices: true })(`result links over ${store.name}`, (it) => {
    describe("GET /api/v1/result-links/{uuid}", () => {
      it.effect("serves, with no API key, what GET /api/v1/results/{id} serves the owner's key", () =>
        Effect.gen(function* () {
          const { resultId, sha256, who } = yield* withResult
          const link = yield* (yield* ResultUrls.ResultUrls).sign(who.accountId, resultId)
          expect(link.path.startsWith(`/api/v1/result-links/${resultId}?`)).toBe(true)
          const signed = yield* T.fetchBytes(link.path)
          const authenticated = yield* Effect.flatMap(T.baseUrl, (base) =>
            Effect.promise(async () => {
              const response = await fetch(`${base}/api/v1/results/${resultId}`, { headers: T.bearer(who.secret) })
              return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) }
            })
          )
          expect(signed.status).toBe(200)
          expect(authenticated.status).toBe(200)
          expect(signed.bytes.equals(FILE)).toBe(true)
          expect(signed.bytes.equals(authenticated.bytes)).toBe(true)
          for (const name of HEADERS) expect(signed.headers.get(name), name).toBe(authenticated.headers.get(name))
          expect(signed.headers.get("content-type")).toBe("image/png")
          expect(signed.headers.get("content-length")).toBe(String(FILE.length))
          expect(signed.headers.get("etag")).toBe(`"${sha256}"`)
          const maxAge = Number(/^private, max-age=(\d+)$/.exec(signed.headers.get("cache-control") ?? "")?.[1])
          expect(maxAge).toBeGreaterThan(3_590)
          expect(maxAge).toBeLessThanOrEqual(3_600)
        })
      )

      it.effect("serves one byte range with 206, answers a range past the end with 416, HEAD and If-None-Match", () =>
        Effect.gen(function* () {
          const { resultId, sha256, who } = yield* withResult
          const link = linkTo(who.accountId, resultId)
          const partial = yield* T.fetchBytes(link, { headers: { range: "bytes=100-1099" } })
          expect(partial.status).toBe(206)
          expect(partial.headers.get("content-range")).toBe(`bytes 100-1099/${FILE.length}`)
          expect(partial.headers.get("content-length")).toBe("1000")
          expect(partial.bytes.equals(FILE.subarray(100, 1100))).toBe(true)
          const tail = yield* T.fetchBytes(link, { headers: { range: "bytes=-10" } })
          expect(tail.status).toBe(206)
          expect(tail.bytes.equals(FILE.subarray(FILE.length - 10))).toBe(true)
          const outside = yield* T.call(link, { headers: { range: `bytes=${FILE.length}-` } })
          expect(outside.status).toBe(416)
          expect(outside.headers.get("content-range")).toBe(`bytes */${FILE.length}`)
          expect(outside.body.code).toBe("INVALID_REQUEST")
          const head = yield* T.fetchBytes(link, { method: "HEAD" })
          expect(head.status).toBe(200)
          expect(head.headers.get("content-length")).toBe(String(FILE.length))
          expect(head.bytes.length).toBe(0)
          const cached = yield* T.fetchBytes(link, { headers: { "if-none-match": `"${sha256}"` } })
          expect(cached.status).toBe(304)
        })
      )

      it.effect("keeps Cache-Control within the time the link has left", () =>
        Effect.gen(function* () {
          const { resultId, who } = yield* withResult
          const reply = yield* T.fetchBytes(linkTo(who.accountId, resultId, new Date(Date.now() + 120_000)))
          expect(reply.status).toBe(200)
          const maxAge = Number(/max-age=(\d+)/.exec(reply.headers.get("cache-control") ?? "")?.[1])
          expect(maxAge).toBeGreaterThan(110)
          expect(maxAge).toBeLessThanOrEqual(120)
        })
      )

      it.effect("answers 404 to a link expiring further than the TTL from now, though signed (under a longer TTL)", () =>
        Effect.gen(function* () {
          const { resultId, who } = yield* withResult
          yield* expectNotFound(linkTo(who.accountId, resultId, new Date(Date.now() + 3 * HOUR_MS)))
        })
      )

      it.effect("serves a link signed with the previous secret (a rotation); links of other secrets stay 404", () =>
        Effect.gen(function* () {
          const { resultId, who } = yield* withResult
          expect((yield* T.fetchBytes(linkTo(who.accountId, resultId, undefined, T.PREVIOUS_LINK_SECRET))).status).toBe(200)
          yield* expectNotFound(linkTo(who.accountId, resultId, undefined, Redacted.make("y".repeat(40))))
        })
      )

      it.effect("answers an expired link 404", () =>
        Effect.gen(function* () {
          const { resultId, who } = yield* withResult
          yield* expectNotFound(linkTo(who.accountId, resultId, new Date(Date.now() - 1_000)))
        })
      )

      it.effect("answers a link whose signature, expiry, uuid or account was altered 404", () =>
        Effect.gen(function* () {
          const { resultId, who } = yield* withResult
          const other = yield* withResult
          const link = linkTo(who.accountId, resultId)
          for (const altered of T.alterationsOf(link, other.who.accountId)) yield* expectNotFound(altered)
          // Another account's existing result, under this link's account and signature.
          yield* expectNotFound(link.replace(resultId, other.resultId))
          yield* expectNotFound(linkTo(who.accountId, resultId, undefined, Redacted.make("x".repeat(40))))
          // A media link's signature (the same secret, another purpose) opens no result.
          const reference = `media:${resultId}` as MediaReference.MediaReference
          const media = MediaUrls.signedPath(T.MEDIA_LINKS.secret, who.accountId, reference, new Date(Date.now() + HOUR_MS))
          yield* expectNotFound(media.replace(MediaUrls.PATH_PREFIX, ResultUrls.PATH_PREFIX))
          // The untouched link still works: the 404s above are the alterations'.
          expect((yield* T.fetchBytes(link)).status).toBe(200)
        })
      )

      it.effect("answers 404 for a validly signed link naming an account the result does not belong to", () =>
        Effect.gen(function* () {
          const { resultId } = yield* withResult
          const other = yield* T.customer()
          yield* expectNotFound(linkTo(other.accountId, resultId))
        })
      )

      it.effect("answers 404 for a validly signed link to a result that does not exist", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          yield* expectNotFound(linkTo(who.accountId, Ids.makeResultId()))
        })
      )

      it.effect("refuses a bad signature without reading the store, so a 404 never tells whether the result exists", () =>
        Effect.gen(function* () {
          const { resultId, who } = yield* withResult
          const forged = T.withQueryParam(linkTo(who.accountId, resultId), "sig", "A".repeat(43))
          const forgedUnknown = T.withQueryParam(linkTo(who.accountId, Ids.makeResultId()), "sig", "A".repeat(43))
          yield* T.setOutage("media")
          yield* Effect.gen(function* () {
            // With the result store unreachable, a forged link is still the plain 404...
            yield* expectNotFound(forged)
            yield* expectNotFound(forgedUnknown)
            // ...while a genuine link does reach the store.
            const genuine = yield* T.call(linkTo(who.accountId, resultId))
            expect(genuine.status).toBe(503)
            expect(genuine.body.code).toBe("API_UNAVAILABLE")
          }).pipe(Effect.ensuring(T.setOutage()))
        })
      )
    })
  })
}

describe("RESULT_LINK_TTL_SECONDS", () => {
  const read = (env: Record<string, string>) =>
    Main.config.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })))

  it.effect("sets how long result links work, one hour when unset", () =>
    Effect.gen(function* () {
      expect((yield* read({})).resultLinkTtlSeconds).toBe(3_600)
      expect((yield* read({ RESULT_LINK_TTL_SECONDS: "600" })).resultLinkTtlSeconds).toBe(600)
      expect((yield* Effect.flip(read({ RESULT_LINK_TTL_SECONDS: "0" })))._tag).toBe("ConfigError")
    })
  )
})
