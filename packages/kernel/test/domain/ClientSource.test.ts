import { describe, expect, it } from "@effect/vitest"
import { ClientSource } from "../../src/index.ts"

describe("client sources", () => {
  it("are IPv4 addresses, IPv4-mapped ones unwrapped, and IPv6 /64 networks", () => {
    expect(ClientSource.sourceOf("203.0.113.9")).toBe("203.0.113.9")
    expect(ClientSource.sourceOf("::ffff:203.0.113.9")).toBe("203.0.113.9")
    expect(ClientSource.sourceOf("2001:db8:aa:bb:1:2:3:4")).toBe("2001:db8:aa:bb::/64")
    expect(ClientSource.sourceOf("2001:db8:aa:bb:ffff::9")).toBe("2001:db8:aa:bb::/64")
    expect(ClientSource.sourceOf("2001:db8:aa:bc::1")).toBe("2001:db8:aa:bc::/64")
    expect(ClientSource.sourceOf(undefined)).toBe("unknown")
    expect(ClientSource.sourceOf("fe80::1%eth0")).toBe("unknown")
  })
})
