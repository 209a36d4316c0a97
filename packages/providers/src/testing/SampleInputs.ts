/**
 * A valid input for any model of the catalog, built from its field listing: each required field
 * without a default gets a plausible value (media fields a fixed https URL, lists the smallest
 * allowed count), then the model's schema fills in the defaults.
 */
import { Schema } from "effect"
import type { Catalog } from "@taskmeter/kernel"

export const MEDIA_URL = "https://media.example.test/inputs/sample.png"

const PROMPT = "A red fox trotting through fresh snow at dawn, soft golden light"

const textValue = (field: Catalog.FieldInfo): string => {
  const max = field.maxLength ?? PROMPT.length
  const min = field.minLength ?? 0
  return PROMPT.slice(0, max).padEnd(min, ".")
}

const valueOf = (field: Catalog.FieldInfo): unknown => {
  if (field.type === "array") {
    const count = field.allowedCounts?.[0] ?? Math.max(1, field.minItems ?? 1)
    return Array.from({ length: count }, () => MEDIA_URL)
  }
  if (field.type === "integer") return field.minimum ?? 0
  if (field.media) return MEDIA_URL
  if (field.options !== undefined) return field.options[0]
  return textValue(field)
}

export const sampleInput = (model: Catalog.ModelDefinition): Catalog.ModelInput =>
  Schema.decodeUnknownSync(model.inputSchema)(
    Object.fromEntries(
      model.fields.filter((field) => field.required && field.default === undefined).map((field) => [field.name, valueOf(field)])
    )
  )
