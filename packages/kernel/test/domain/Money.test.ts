import { describe, expect, it } from "@effect/vitest"
import * as Money from "../../src/domain/Money.ts"

describe("Money.parseUsd", () => {
  it("reads decimal USD exactly into micros", () => {
    expect(Money.parseUsd("25")).toBe(25_000_000)
    expect(Money.parseUsd("0.5")).toBe(500_000)
    expect(Money.parseUsd(" 3.141592 ")).toBe(3_141_592)
    expect(Money.parseUsd("0.000001")).toBe(1)
    expect(Money.parseUsd("0")).toBe(0)
    // 0.1 + 0.2 in floats is 0.30000000000000004: never seen here.
    expect(Money.parseUsd("0.3")).toBe(300_000)
  })

  it("refuses what is not a non-negative amount with at most six decimals", () => {
    for (const text of ["", "-1", "1.0000001", "1e3", "1,5", ".5", "5.", "abc", "0x10", "Infinity", "NaN"]) {
      expect(Money.parseUsd(text), text).toBeUndefined()
    }
  })

  it("takes up to MAX_USD, the largest exact amount, and refuses more instead of throwing", () => {
    expect(Money.parseUsd(Money.MAX_USD)).toBe(Number.MAX_SAFE_INTEGER)
    expect(Money.parseUsd("9007199254.740992")).toBeUndefined()
    expect(Money.parseUsd("99999999999")).toBeUndefined()
    expect(Money.parseUsd("999999999999.999999")).toBeUndefined()
  })

  it("formatUsd prints what parseUsd reads", () => {
    for (const amount of [0, 1, 500_000, 25_000_000, 3_141_592, Number.MAX_SAFE_INTEGER]) {
      expect(Money.parseUsd(Money.formatUsd(amount))).toBe(amount)
    }
    expect(Money.formatUsd(Number.MAX_SAFE_INTEGER)).toBe(Money.MAX_USD)
  })
})
