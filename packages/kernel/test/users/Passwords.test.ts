import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Passwords from "../../src/users/Passwords.ts"

describe("Passwords", () => {
  it.effect("hashes with scrypt under the current parameters, salted, and verifies only the same password", () =>
    Effect.gen(function* () {
      const hash = yield* Passwords.hash("correct horse battery")
      const again = yield* Passwords.hash("correct horse battery")
      expect(hash).toMatch(new RegExp(`^scrypt\\$${Passwords.current.N}\\$8\\$1\\$[A-Za-z0-9_-]{22}\\$[A-Za-z0-9_-]{43}$`))
      expect(again).not.toBe(hash)
      expect(yield* Passwords.verify("correct horse battery", hash)).toBe(true)
      expect(yield* Passwords.verify("correct horse batterY", hash)).toBe(false)
      expect(yield* Passwords.verify("correct horse battery", null)).toBe(false)
    })
  )

  it.effect("verifies a hash made with other parameters by its own, and says it needs a rehash when they are weaker", () =>
    Effect.gen(function* () {
      const weak = yield* Passwords.hash("correct horse battery", { N: 2 ** 10, r: 8, p: 1 })
      expect(yield* Passwords.verify("correct horse battery", weak)).toBe(true)
      expect(Passwords.needsRehash(weak)).toBe(true)
      expect(Passwords.needsRehash(yield* Passwords.hash("correct horse battery"))).toBe(false)
    })
  )

  it("refuses passwords shorter than 10 or longer than 256 characters", () => {
    expect(Passwords.problem("short")).toContain("at least 10")
    expect(Passwords.problem("x".repeat(257))).toContain("at most 256")
    expect(Passwords.problem("long enough pass")).toBeUndefined()
  })
})
