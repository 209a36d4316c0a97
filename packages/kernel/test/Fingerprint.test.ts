import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { Fingerprint } from "../src/index.ts"

/** The recursive definition canonicalJson must agree with: keys sorted at every depth, then JSON.stringify. */
const sortKeys = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (typeof value !== "object" || value === null) return value
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])])
  )
}

describe("Fingerprint.canonicalJson", () => {
  it("writes what JSON.stringify writes of the value with its keys sorted", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(Fingerprint.canonicalJson(value)).toBe(JSON.stringify(sortKeys(value)))
      }),
      { numRuns: 500 }
    )
  })

  it("sorts keys at every depth, leaves out undefined members and writes undefined array items as null", () => {
    expect(Fingerprint.canonicalJson({ b: [3, undefined, { d: 1, c: 2 }], a: undefined, "10": 0, "9": 0 })).toBe(
      '{"9":0,"10":0,"b":[3,null,{"c":2,"d":1}]}'
    )
    expect(Fingerprint.canonicalJson(JSON.parse('{"z":1,"__proto__":{"polluted":1}}'))).toBe('{"__proto__":{"polluted":1},"z":1}')
    expect(Fingerprint.canonicalJson({ when: new Date(0) })).toBe('{"when":"1970-01-01T00:00:00.000Z"}')
  })

  it("serializes a value nested 100,000 levels deep instead of overflowing the stack", () => {
    const depth = 100_000
    const objects = JSON.parse('{"a":'.repeat(depth) + "1" + "}".repeat(depth))
    expect(Fingerprint.canonicalJson(objects)).toBe('{"a":'.repeat(depth) + "1" + "}".repeat(depth))
    const arrays = JSON.parse("[".repeat(depth) + "]".repeat(depth))
    expect(Fingerprint.canonicalJson(arrays)).toHaveLength(2 * depth)
  })

  it("throws on a cycle, as JSON.stringify does, but not on a value shared by two members", () => {
    const shared = { x: 1 }
    expect(Fingerprint.canonicalJson({ b: shared, a: shared })).toBe('{"a":{"x":1},"b":{"x":1}}')
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    expect(() => Fingerprint.canonicalJson(cyclic)).toThrow(TypeError)
  })
})
