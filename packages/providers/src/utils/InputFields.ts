/**
 * Typed reads of a validated `ModelInput` for the adapters' mapping tables. The catalog has
 * already checked every field and filled in defaults, so a mismatch here is a defect of the
 * table (a field the model does not have), reported as such.
 */
import type { Catalog } from "@taskmeter/kernel"

const defect = (field: string, expected: string, value: unknown) =>
  new TypeError(`input.${field}: expected ${expected}, got ${JSON.stringify(value)}`)

export const string = (input: Catalog.ModelInput, field: string): string => {
  const value = input[field]
  if (typeof value !== "string") throw defect(field, "a string", value)
  return value
}

export const optionalString = (input: Catalog.ModelInput, field: string): string | undefined =>
  input[field] === undefined ? undefined : string(input, field)

export const strings = (input: Catalog.ModelInput, field: string): ReadonlyArray<string> => {
  const value = input[field]
  if (value === undefined) return []
  if (!Array.isArray(value) || !value.every((item) => typeof item === "string")) throw defect(field, "strings", value)
  return value
}

export const integer = (input: Catalog.ModelInput, field: string): number => {
  const value = input[field]
  const parsed = typeof value === "string" ? Number(value) : value
  if (typeof parsed !== "number" || !Number.isInteger(parsed)) throw defect(field, "an integer", value)
  return parsed
}

/** "1k" -> "1K": the upper-case resolution names most upstreams use. */
export const upperResolution = (input: Catalog.ModelInput, field = "resolution"): string => string(input, field).toUpperCase()
