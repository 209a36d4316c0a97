import { describe, expect, it } from "@effect/vitest"
import { Reconciliation, TopUpBounds } from "@taskmeter/kernel"

const USD = 1_000_000
const paid = (paymentId: string, amountMicros: number, refundedMicros = 0) => ({
  paymentId,
  accountId: "acct_x",
  amountMicros,
  refundedMicros,
  createdAt: new Date(0)
})
const books = (paymentId: string, grants: number, grantedMicros: number, refundedMicros = 0) => ({
  paymentId,
  grants,
  grantedMicros,
  refundedMicros
})

describe("Reconciliation.compare", () => {
  it("names each payment the ledger lacks, grants twice or for another amount, or whose refunds differ", () => {
    const found = Reconciliation.compare(
      [
        paid("ok", 5 * USD, USD),
        paid("missing", USD),
        paid("twice", 2 * USD),
        paid("other", 3 * USD),
        paid("refund", 4 * USD, 4 * USD)
      ],
      [
        books("ok", 1, 5 * USD, USD),
        books("twice", 2, 4 * USD),
        books("other", 1, 30 * USD),
        books("refund", 1, 4 * USD, 8 * USD)
      ]
    )
    expect(found.map((d) => [d.paymentId, d.problem, d.processorMicros, d.ledgerMicros])).toEqual([
      ["missing", "missing", USD, 0],
      ["twice", "duplicate", 2 * USD, 4 * USD],
      ["other", "amount_mismatch", 3 * USD, 30 * USD],
      ["refund", "refund_mismatch", 4 * USD, 8 * USD]
    ])
  })

  it("finds nothing when the books agree", () => {
    expect(Reconciliation.compare([paid("a", USD, 0)], [books("a", 1, USD)])).toEqual([])
  })
})

describe("TopUpBounds", () => {
  const bounds = { minMicros: 5 * USD, maxMicros: 100 * USD, presetsMicros: [10 * USD] }

  it("accepts whole cents within the bounds and says what to fix otherwise", () => {
    expect(TopUpBounds.check(bounds, 5 * USD)).toBeUndefined()
    expect(TopUpBounds.check(bounds, 100 * USD)).toBeUndefined()
    expect(TopUpBounds.check(bounds, 12_340_000)).toBeUndefined()
    for (const amount of [0, 4_990_000, 100 * USD + 10_000, 5 * USD + 1, Number.NaN, 1.5]) {
      expect(TopUpBounds.check(bounds, amount)).toBe(
        "amountMicros must be whole cents from 5000000 ($5.00) to 100000000 ($100.00)"
      )
    }
  })

  it("refuses bounds that cannot be offered", () => {
    expect(TopUpBounds.invalid(bounds)).toBeUndefined()
    expect(TopUpBounds.invalid({ ...bounds, minMicros: 200 * USD })).toBe("the top-up minimum exceeds the maximum")
    expect(TopUpBounds.invalid({ ...bounds, presetsMicros: [500 * USD] })).toBe(
      "every top-up preset must lie between the minimum and the maximum"
    )
    expect(TopUpBounds.invalid({ ...bounds, minMicros: 0 })).toBe("top-up amounts must be positive whole cents")
    expect(TopUpBounds.invalid({ ...bounds, presetsMicros: [10_000_001] })).toBe("top-up amounts must be positive whole cents")
  })
})
