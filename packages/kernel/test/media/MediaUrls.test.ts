import { Effect, Redacted } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { TestClock } from "effect/testing"
import { makeAccountId } from "../../src/domain/Ids.ts"
import * as MediaReference from "../../src/media/MediaReference.ts"
import * as MediaUrls from "../../src/media/MediaUrls.ts"

const secret = Redacted.make("0123456789abcdef0123456789abcdef")
const accountId = makeAccountId()
const reference = MediaReference.make()
const at = new Date("2030-01-01T00:00:00Z")
const inAnHour = new Date(at.getTime() + 3_600_000)

describe("MediaUrls", () => {
  it("signs a link that verifies for its account and upload until it expires", () => {
    const path = MediaUrls.signedPath(secret, accountId, reference, inAnHour)
    expect(path.startsWith(`/api/v1/media-links/${MediaReference.uuidOf(reference)}?`)).toBe(true)
    expect(MediaUrls.verify(secret, path, at)).toEqual({ _tag: "Valid", accountId, reference })
    expect(MediaUrls.verify(secret, path, inAnHour)).toEqual({ _tag: "Expired" })
  })

  it("refuses a link changed in any part, or signed with another secret", () => {
    const path = MediaUrls.signedPath(secret, accountId, reference, inAnHour)
    const url = new URL(path, "https://x.test")
    const tampered = [
      path.replace(MediaReference.uuidOf(reference), MediaReference.uuidOf(MediaReference.make())),
      path.replace(accountId, makeAccountId()),
      path.replace(/exp=\d+/, `exp=${Number(url.searchParams.get("exp")) + 3600}`),
      path.replace(/sig=[^&]+/, "sig=AAAA"),
      path.replace(/&sig=[^&]+/, ""),
      "/api/v1/results/abc?exp=1&sig=x"
    ]
    for (const link of tampered) expect(MediaUrls.verify(secret, link, at)).toEqual({ _tag: "Invalid" })
    const other = Redacted.make("another-secret-another-secret-another")
    expect(MediaUrls.verify(other, path, at)).toEqual({ _tag: "Invalid" })
  })

  it("refuses a link expiring beyond now + the TTL in force, though signed (under a longer TTL)", () => {
    const inADay = new Date(at.getTime() + 24 * 3_600_000)
    const path = MediaUrls.signedPath(secret, accountId, reference, inADay)
    expect(MediaUrls.verify(secret, path, at)).toEqual({ _tag: "Invalid" })
    expect(MediaUrls.verify(secret, path, at, 24 * 3_600_000)).toEqual({ _tag: "Valid", accountId, reference })
    // An hour before its expiry it is within the TTL again.
    expect(MediaUrls.verify(secret, path, new Date(inADay.getTime() - 3_600_000))._tag).toBe("Valid")
  })

  it.effect("a rotation: links of the previous secret are still accepted, new ones are signed with the current", () =>
    Effect.gen(function* () {
      const previous = Redacted.make("the-secret-before-the-rotation-0000")
      const old = MediaUrls.make({ baseUrl: "https://a.test", secret: previous })
      const rotated = MediaUrls.make({ baseUrl: "https://a.test", secret, previousSecret: previous })
      const oldLink = (yield* old.sign(accountId, reference)).slice("https://a.test".length)
      expect(yield* rotated.verify(oldLink)).toEqual({ _tag: "Valid", accountId, reference })
      const newLink = (yield* rotated.sign(accountId, reference)).slice("https://a.test".length)
      expect(yield* rotated.verify(newLink)).toEqual({ _tag: "Valid", accountId, reference })
      expect(yield* old.verify(newLink)).toEqual({ _tag: "Invalid" })
      // Once the previous secret is dropped, its links stop working.
      expect(yield* MediaUrls.make({ baseUrl: "https://a.test", secret }).verify(oldLink)).toEqual({ _tag: "Invalid" })
      expect(() => MediaUrls.make({ baseUrl: "https://a.test", secret, previousSecret: Redacted.make("short") })).toThrow(
        RangeError
      )
    })
  )

  it("wants a long secret and a usable base URL", () => {
    expect(() => MediaUrls.make({ baseUrl: "https://a.test", secret: Redacted.make("short") })).toThrow(RangeError)
    expect(() => MediaUrls.make({ baseUrl: "not a url", secret })).toThrow()
  })

  it.effect("the service signs absolute links on its clock, valid for the configured time", () =>
    Effect.gen(function* () {
      const links = MediaUrls.make({ baseUrl: "https://api.example.com/", secret, ttlMs: 60_000 })
      const link = yield* links.sign(accountId, reference)
      expect(link.startsWith("https://api.example.com/api/v1/media-links/")).toBe(true)
      const path = link.slice("https://api.example.com".length)
      expect((yield* links.verify(path))._tag).toBe("Valid")
      yield* TestClock.adjust("60 seconds")
      expect(yield* links.verify(path)).toEqual({ _tag: "Expired" })
    })
  )
})
