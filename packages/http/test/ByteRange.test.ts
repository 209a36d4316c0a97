import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as ByteRange from "../src/ByteRange.ts"

describe("ByteRange.parse", () => {
  it("reads the three forms of one range", () => {
    expect(ByteRange.parse("bytes=0-9", 100)).toEqual({ _tag: "Partial", range: { start: 0, end: 9 } })
    expect(ByteRange.parse("bytes=90-", 100)).toEqual({ _tag: "Partial", range: { start: 90, end: 99 } })
    expect(ByteRange.parse("bytes=-5", 100)).toEqual({ _tag: "Partial", range: { start: 95, end: 99 } })
    expect(ByteRange.parse("bytes=-500", 100)).toEqual({ _tag: "Partial", range: { start: 0, end: 99 } })
    expect(ByteRange.parse("bytes=50-500", 100)).toEqual({ _tag: "Partial", range: { start: 50, end: 99 } })
  })

  it("finds a range starting past the end unsatisfiable", () => {
    expect(ByteRange.parse("bytes=100-", 100)._tag).toBe("Unsatisfiable")
    expect(ByteRange.parse("bytes=100-200", 100)._tag).toBe("Unsatisfiable")
    expect(ByteRange.parse("bytes=-0", 100)._tag).toBe("Unsatisfiable")
    expect(ByteRange.parse("bytes=0-", 0)._tag).toBe("Unsatisfiable")
  })

  it("ignores what it does not serve: no header, other units, several ranges, reversed or malformed ranges", () => {
    for (const header of [undefined, "", "items=0-1", "bytes=0-1,3-4", "bytes=5-1", "bytes=-", "bytes=a-b", "bytes 0-1"]) {
      expect(ByteRange.parse(header, 100), String(header)).toEqual({ _tag: "Whole" })
    }
  })

  it("always serves a non-empty range inside the file", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.option(fc.nat(20_000), { nil: undefined }),
        fc.option(fc.nat(20_000), { nil: undefined }),
        (size, first, last) => {
          const header = `bytes=${first ?? ""}-${last ?? ""}`
          const result = ByteRange.parse(header, size)
          if (result._tag !== "Partial") return
          expect(result.range.start).toBeGreaterThanOrEqual(0)
          expect(result.range.start).toBeLessThanOrEqual(result.range.end)
          expect(result.range.end).toBeLessThan(size)
        }
      )
    )
  })
})
