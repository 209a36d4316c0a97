/**
 * What a registration is counted against: its fixed window (its source: kernel ClientSource).
 */
import { describe, expect, it } from "@effect/vitest"
import { RegistrationLimit } from "../src/index.ts"

describe("registration windows", () => {
  const options = { windowSeconds: 3600, perSource: 20, total: 1000 }

  it("are aligned to the epoch, and Retry-After is what is left of one", () => {
    const now = new Date("2030-05-01T10:59:30.200Z")
    const window = RegistrationLimit.windowAt(now, "203.0.113.9", options)
    expect(window).toEqual({
      source: "203.0.113.9",
      start: new Date("2030-05-01T10:00:00.000Z"),
      end: new Date("2030-05-01T11:00:00.000Z"),
      perSource: 20,
      total: 1000
    })
    expect(RegistrationLimit.retryAfterSeconds(window, now)).toBe(30)
    expect(RegistrationLimit.retryAfterSeconds(window, new Date("2030-05-01T10:59:59.999Z"))).toBe(1)
  })

  it("take defaults, and refuse limits that are not positive integers", () => {
    expect(RegistrationLimit.resolve({ perSource: 5 })).toEqual({ windowSeconds: 3600, perSource: 5, total: 1000 })
    expect(() => RegistrationLimit.resolve({ total: 0 })).toThrow("registrationLimit.total")
    expect(() => RegistrationLimit.resolve({ windowSeconds: 1.5 })).toThrow("registrationLimit.windowSeconds")
  })
})
