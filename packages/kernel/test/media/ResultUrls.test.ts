import { Effect, Redacted } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { TestClock } from "effect/testing"
import { makeAccountId, makeResultId } from "../../src/domain/Ids.ts"
import * as MediaReference from "../../src/media/MediaReference.ts"
import * as MediaUrls from "../../src/media/MediaUrls.ts"
import * as ResultUrls from "../../src/media/ResultUrls.ts"

const secret = Redacted.make("0123456789abcdef0123456789abcdef")
const accountId = makeAccountId()
const resultId = makeResultId()
const at = new Date("2030-01-01T00:00:00Z")
const inAnHour = new Date(at.getTime() + 3_600_000)

describe("ResultUrls", () => {
  it("signs a link that verifies for its account and result until it expires", () => {
    const path = ResultUrls.signedPath(secret, accountId, resultId, inAnHour)
    expect(path.startsWith(`/api/v1/result-links/${resultId}?`)).toBe(true)
    expect(ResultUrls.verify(secret, path, at)).toEqual({ _tag: "Valid", accountId, resultId, expiresAt: inAnHour })
    expect(ResultUrls.verify(secret, path, inAnHour)).toEqual({ _tag: "Expired" })
  })

  it("refuses a link changed in any part, or signed with another secret", () => {
    const path = ResultUrls.signedPath(secret, accountId, resultId, inAnHour)
    const exp = Number(new URL(path, "https://x.test").searchParams.get("exp"))
    const tampered = [
      path.replace(resultId, makeResultId()),
      path.replace(accountId, makeAccountId()),
      path.replace(/exp=\d+/, `exp=${exp + 3600}`),
      path.replace(/sig=[^&]+/, "sig=AAAA"),
      path.replace(/&sig=[^&]+/, ""),
      path.replace("/api/v1/result-links/", "/api/v1/results/"),
      path.replace(resultId, resultId.toUpperCase())
    ]
    for (const link of tampered) expect(ResultUrls.verify(secret, link, at), link).toEqual({ _tag: "Invalid" })
    const other = Redacted.make("another-secret-another-secret-another")
    expect(ResultUrls.verify(other, path, at)).toEqual({ _tag: "Invalid" })
  })

  it("never takes a media link's signature, nor gives one a media link takes", () => {
    const uuid = MediaReference.uuidOf(MediaReference.make())
    const media = MediaUrls.signedPath(secret, accountId, `media:${uuid}` as MediaReference.MediaReference, inAnHour)
    const asResult = media.replace(MediaUrls.PATH_PREFIX, ResultUrls.PATH_PREFIX)
    expect(ResultUrls.verify(secret, asResult, at)).toEqual({ _tag: "Invalid" })
    const result = ResultUrls.signedPath(secret, accountId, uuid as typeof resultId, inAnHour)
    const asMedia = result.replace(ResultUrls.PATH_PREFIX, MediaUrls.PATH_PREFIX)
    expect(MediaUrls.verify(secret, asMedia, at)).toEqual({ _tag: "Invalid" })
  })

  it("wants a long secret and a ttl of at least a second", () => {
    expect(() => ResultUrls.make({ secret: Redacted.make("short") })).toThrow(RangeError)
    expect(() => ResultUrls.make({ secret, ttlMs: 999 })).toThrow(RangeError)
  })

  it.effect("the service signs on its clock, for the configured time, and states the expiry the link carries", () =>
    Effect.gen(function* () {
      const links = ResultUrls.make({ secret, ttlMs: 60_000 })
      yield* TestClock.setTime(at.getTime() + 400)
      const link = yield* links.sign(accountId, resultId)
      expect(link.expiresAt).toEqual(new Date(at.getTime() + 60_000))
      expect(new URL(link.path, "https://x.test").searchParams.get("exp")).toBe(String(link.expiresAt.getTime() / 1000))
      expect(yield* links.verify(link.path)).toEqual({ _tag: "Valid", accountId, resultId, expiresAt: link.expiresAt })
      yield* TestClock.adjust("59 seconds")
      expect((yield* links.verify(link.path))._tag).toBe("Valid")
      yield* TestClock.adjust("1 second")
      expect((yield* links.verify(link.path))._tag).toBe("Expired")
    })
  )

  it.effect("a link signed under a longer TTL lives no longer than the TTL in force", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(at.getTime())
      const long = yield* ResultUrls.make({ secret, ttlMs: 24 * 3_600_000 }).sign(accountId, resultId)
      const current = ResultUrls.make({ secret, ttlMs: 3_600_000 })
      expect(yield* current.verify(long.path)).toEqual({ _tag: "Invalid" })
      // Within a minute's clock skew of now + TTL it is taken; past that, refused.
      const justPast = ResultUrls.signedPath(secret, accountId, resultId, new Date(at.getTime() + 3_600_000 + 60_000))
      expect((yield* current.verify(justPast))._tag).toBe("Valid")
      const beyond = ResultUrls.signedPath(secret, accountId, resultId, new Date(at.getTime() + 3_600_000 + 61_000))
      expect(yield* current.verify(beyond)).toEqual({ _tag: "Invalid" })
    })
  )

  it.effect("a rotation: the previous secret's links are accepted, links are signed with the current one", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(at.getTime())
      const previous = Redacted.make("the-secret-before-the-rotation-0000")
      const old = yield* ResultUrls.make({ secret: previous }).sign(accountId, resultId)
      const rotated = ResultUrls.make({ secret, previousSecret: previous })
      expect((yield* rotated.verify(old.path))._tag).toBe("Valid")
      const fresh = yield* rotated.sign(accountId, resultId)
      expect(fresh.path).toBe(ResultUrls.signedPath(secret, accountId, resultId, fresh.expiresAt))
      expect(yield* ResultUrls.make({ secret }).verify(old.path)).toEqual({ _tag: "Invalid" })
      // The previous secret's media links never open a result either.
      const media = MediaUrls.signedPath(previous, accountId, `media:${resultId}` as MediaReference.MediaReference, inAnHour)
      expect(yield* rotated.verify(media.replace(MediaUrls.PATH_PREFIX, ResultUrls.PATH_PREFIX))).toEqual({ _tag: "Invalid" })
    })
  )

  it.effect("defaults to links of one hour", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(at.getTime())
      const link = yield* ResultUrls.make({ secret }).sign(accountId, resultId)
      expect(link.expiresAt).toEqual(inAnHour)
    })
  )
})
