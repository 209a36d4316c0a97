import { describe, expect, it } from "@effect/vitest"
import { PresentedCredential } from "@taskmeter/kernel"

const KEY = "tm_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"

describe("PresentedCredential.fromHeaders", () => {
  it("takes a Bearer credential, whatever the scheme's case and the spaces around it", () => {
    for (const authorization of [`Bearer ${KEY}`, `bearer ${KEY}`, `BEARER \t ${KEY}  `]) {
      expect(PresentedCredential.fromHeaders({ authorization })).toEqual({ secret: KEY, header: "authorization" })
    }
  })

  it("takes x-api-key, trimmed, when there is no Bearer credential", () => {
    expect(PresentedCredential.fromHeaders({ "x-api-key": ` ${KEY} ` })).toEqual({ secret: KEY, header: "x-api-key" })
    expect(PresentedCredential.fromHeaders({ authorization: "Basic dXNlcjpwYXNz", "x-api-key": KEY })).toEqual({
      secret: KEY,
      header: "x-api-key"
    })
    expect(PresentedCredential.fromHeaders({ authorization: "Bearer ", "x-api-key": KEY })).toEqual({
      secret: KEY,
      header: "x-api-key"
    })
  })

  it("takes exactly one of the two: Bearer wins when both are sent", () => {
    expect(PresentedCredential.fromHeaders({ authorization: "Bearer tm_unknown", "x-api-key": KEY })).toEqual({
      secret: "tm_unknown",
      header: "authorization"
    })
  })

  it("keeps a credential with inner spaces whole, for the key check to refuse", () => {
    expect(PresentedCredential.fromHeaders({ authorization: "Bearer tm_a tm_b" })?.secret).toBe("tm_a tm_b")
  })

  it("finds none without a header, with an empty one, or with another scheme", () => {
    for (const headers of [
      {},
      { authorization: "Bearer" },
      { authorization: "Bearer   " },
      { authorization: "Basic dXNlcjpwYXNz" },
      { authorization: `Bearer${KEY}` },
      { "x-api-key": "  " }
    ]) {
      expect(PresentedCredential.fromHeaders(headers), JSON.stringify(headers)).toBeUndefined()
    }
  })
})
