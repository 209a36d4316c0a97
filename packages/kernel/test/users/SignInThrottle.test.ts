import { describe, expect, it } from "@effect/vitest"
import * as SignInThrottle from "../../src/users/SignInThrottle.ts"

describe("SignInThrottle", () => {
  it("refuses a key at its failures until its window ends, and keeps keys apart", () => {
    const throttle = SignInThrottle.make({ maxFailures: 2, windowMs: 1_000 })
    expect(throttle.retryAfterMs("a", 0)).toBe(0)
    throttle.fail("a", 100)
    expect(throttle.retryAfterMs("a", 200)).toBe(0)
    throttle.fail("a", 300)
    expect(throttle.retryAfterMs("a", 400)).toBe(700)
    expect(throttle.retryAfterMs("b", 400)).toBe(0)
    expect(throttle.retryAfterMs("a", 1_100)).toBe(0)
    throttle.fail("a", 1_100)
    expect(throttle.retryAfterMs("a", 1_200)).toBe(0)
  })

  it("keeps at most maxKeys windows, dropping the oldest", () => {
    const throttle = SignInThrottle.make({ maxFailures: 1, windowMs: 1_000, maxKeys: 2 })
    throttle.fail("a", 0)
    throttle.fail("b", 0)
    throttle.fail("c", 0)
    expect(throttle.retryAfterMs("a", 10)).toBe(0)
    expect(throttle.retryAfterMs("b", 10)).toBe(990)
    expect(throttle.retryAfterMs("c", 10)).toBe(990)
  })
})
