/**
 * The canonical fingerprint of a submission, which an Idempotency-Key is bound to: SHA-256 of
 * the canonical JSON (object keys sorted at every depth, no whitespace) of the model slug, the
 * input after defaults, and expectedPriceMicros (null when not sent). Two requests that differ
 * only in key order or in spelling out a default have the same fingerprint.
 */
import { createHash } from "node:crypto"
import type { ModelInput } from "../catalog/ModelDefinition.ts"

/** A value as JSON.stringify would see it: through its `toJSON`, if it has one. */
const jsonValueOf = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && typeof (value as { toJSON?: unknown }).toJSON === "function"
    ? (value as { toJSON: (key: string) => unknown }).toJSON(key)
    : value

/** What JSON.stringify leaves out of an object (and writes as null in an array). */
const isOmitted = (value: unknown): boolean => value === undefined || typeof value === "function" || typeof value === "symbol"

/**
 * The keys of `record` in the order JSON.stringify writes those of an object built from them
 * sorted (what fingerprints have always hashed, so stored ones still match): integer-like keys
 * ascending first, as JavaScript orders an object's own keys, then the others sorted.
 */
const sortedKeys = (record: object): ReadonlyArray<string> =>
  Object.keys(
    Object.fromEntries(
      Object.keys(record)
        .sort()
        .map((key) => [key, true])
    )
  )

type Work =
  | { readonly _tag: "value"; readonly value: unknown }
  | { readonly _tag: "text"; readonly text: string }
  | { readonly _tag: "leave"; readonly object: object }

/**
 * JSON with object keys sorted (by UTF-16 code units), so equal values always serialize the same
 * way: what `JSON.stringify` writes once every object's keys are sorted. Written with a work list
 * instead of recursion, so that a value nested at any depth (a hostile input 100,000 levels deep
 * reaches this before validation on the MCP path) is serialized, not a stack overflow. A cycle
 * throws the TypeError JSON.stringify throws.
 */
export const canonicalJson = (value: unknown): string => {
  const top = jsonValueOf(value, "")
  if (isOmitted(top)) return JSON.stringify(top)
  const out: Array<string> = []
  const open = new Set<object>()
  const work: Array<Work> = [{ _tag: "value", value: top }]
  while (work.length > 0) {
    const item = work.pop()!
    if (item._tag === "text") {
      out.push(item.text)
      continue
    }
    if (item._tag === "leave") {
      open.delete(item.object)
      continue
    }
    const current = item.value
    if (typeof current !== "object" || current === null) {
      // Primitives (and a BigInt's TypeError) exactly as JSON.stringify writes them.
      out.push(isOmitted(current) ? "null" : JSON.stringify(current))
      continue
    }
    if (open.has(current)) throw new TypeError("Converting circular structure to JSON")
    open.add(current)
    const later: Array<Work> = []
    if (Array.isArray(current)) {
      out.push("[")
      current.forEach((element, index) => {
        if (index > 0) later.push({ _tag: "text", text: "," })
        later.push({ _tag: "value", value: jsonValueOf(element, String(index)) })
      })
      later.push({ _tag: "text", text: "]" })
    } else {
      out.push("{")
      const record = current as { readonly [key: string]: unknown }
      let first = true
      for (const key of sortedKeys(record)) {
        const member = jsonValueOf(record[key], key)
        if (isOmitted(member)) continue
        later.push({ _tag: "text", text: `${first ? "" : ","}${JSON.stringify(key)}:` }, { _tag: "value", value: member })
        first = false
      }
      later.push({ _tag: "text", text: "}" })
    }
    later.push({ _tag: "leave", object: current })
    for (let i = later.length - 1; i >= 0; i--) work.push(later[i]!)
  }
  return out.join("")
}

export const of = (submission: {
  readonly model: string
  readonly input: ModelInput
  readonly expectedPriceMicros: number | undefined
}): string =>
  createHash("sha256")
    .update(
      canonicalJson({
        model: submission.model,
        input: submission.input,
        expectedPriceMicros: submission.expectedPriceMicros ?? null
      })
    )
    .digest("hex")
