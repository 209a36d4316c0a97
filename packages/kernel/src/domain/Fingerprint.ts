/**
 * The canonical fingerprint of a submission, which an Idempotency-Key is bound to: SHA-256 of
 * the canonical JSON (object keys sorted at every depth, no whitespace) of the model slug, the
 * input after defaults, and expectedPriceMicros (null when not sent). Two requests that differ
 * only in key order or in spelling out a default have the same fingerprint.
 */
import { createHash } from "node:crypto"
import type { ModelInput } from "../catalog/ModelDefinition.ts"

/** JSON with object keys sorted, so equal values always serialize the same way. */
export const canonicalJson = (value: unknown): string => JSON.stringify(sortKeys(value))

const sortKeys = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (typeof value !== "object" || value === null) return value
  return Object.fromEntries(
    Object.keys(value).sort().map((key) => [key, sortKeys((value as { readonly [k: string]: unknown })[key])])
  )
}

export const of = (submission: {
  readonly model: string
  readonly input: ModelInput
  readonly expectedPriceMicros: number | undefined
}): string =>
  createHash("sha256")
    .update(canonicalJson({
      model: submission.model,
      input: submission.input,
      expectedPriceMicros: submission.expectedPriceMicros ?? null
    }))
    .digest("hex")
