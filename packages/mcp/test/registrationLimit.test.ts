/**
 * What a registration is counted against: its source network and its fixed window.
 */
import { describe, expect, it } from "@effect/vitest"
import { RegistrationLimit } from "../src/index.ts"

describe("registration sources", () => {
  it("are IPv4 addresses, IPv4-mapped ones unwrapped, and IPv6 /64 networks", () => {
    expect(RegistrationLimit.sourceOf("203.0.113.9")).toBe("203.0.113.9")
    expect(RegistrationLimit.sourceOf("::ffff:203.0.113.9")).toBe("203.0.113.9")
    expect(RegistrationLimit.sourceOf("2001:db8:aa:bb:1:2:3:4")).toBe("2001:db8:aa:bb::/64")
    expect(RegistrationLimit.sourceOf("2001:db8:aa:bb:ffff::9")).toBe("2001:db8:aa:bb::/64")
    expect(RegistrationLimit.sourceOf("2001:db8:aa:bc::1")).toBe("2001:db8:aa:bc::/64")
    expect(RegistrationLimit.sourceOf(undefined)).toBe("unknown")
    expect(RegistrationLimit.sourceOf("fe80::1%eth0")).toBe("unknown")
  })
})

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
