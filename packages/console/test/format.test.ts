import { describe, expect, it } from "vitest"
import { money, usd } from "../src/browser/format.ts"

describe("money", () => {
  it("shows dollars and cents, rounded half away from zero, with thousands separators", () => {
    expect(money(25_000_000)).toBe("$25.00")
    expect(money(1_234_567)).toBe("$1.23")
    expect(money(1_235_000)).toBe("$1.24")
    expect(money(9_999_995_000)).toBe("$10,000.00")
    expect(money(10_000)).toBe("$0.01")
    expect(money(25_000)).toBe("$0.03")
    expect(money(0)).toBe("$0.00")
    expect(money(-1_500_000)).toBe("-$1.50")
  })

  it("shows an amount under a cent to the micro rather than as $0.00", () => {
    expect(money(2_500)).toBe("$0.0025")
    expect(money(1)).toBe("$0.000001")
    expect(money(9_999)).toBe("$0.009999")
    expect(money(-2_500)).toBe("-$0.0025")
  })

  it("leaves usd exact, for prices and ledger entries", () => {
    expect(usd(1_234_567)).toBe("$1.234567")
    expect(usd(25_000)).toBe("$0.025")
  })
})
