/**
 * The playground's request: the model's input from the form's values (each field's type
 * applied, empty optional fields left out, as the API would omit them), and the price the API
 * will quote for it, computed from GET /api/v1/prices by the Pricer's rule (the input defaulted,
 * the one matching rate-card rule, times its quantity field).
 */
import { PriceList } from "@taskmeter/kernel"
import type { ModelField } from "@taskmeter/kernel"

export type FormValues = Readonly<Record<string, string | ReadonlyArray<string>>>

/** The `input` of POST /api/v1/jobs for the form's values. */
export const inputOf = (fields: ReadonlyArray<ModelField.FieldInfo>, values: FormValues): Record<string, unknown> => {
  const input: Record<string, unknown> = {}
  for (const field of fields) {
    const value = values[field.name]
    if (field.type === "array") {
      const items = (Array.isArray(value) ? value : String(value ?? "").split("\n")).map((item) => item.trim()).filter(Boolean)
      if (items.length > 0) input[field.name] = items
    } else if (typeof value === "string" && value.trim() !== "") {
      input[field.name] = field.type === "integer" ? Number(value) : value
    }
  }
  return input
}

/** The form's starting values: each field's default, else empty. */
export const initialValues = (fields: ReadonlyArray<ModelField.FieldInfo>): FormValues =>
  Object.fromEntries(fields.map((field) => [field.name, field.type === "array" ? [] : String(field.default ?? "")]))

export type Quote =
  | { readonly kind: "price"; readonly priceMicros: number }
  | { readonly kind: "unavailable"; readonly reason: string }

/** What the API will quote for `input`, or why it will not take it. */
export const quote = (
  price: PriceList.PublicPrice | undefined,
  fields: ReadonlyArray<ModelField.FieldInfo>,
  input: Record<string, unknown>
): Quote => {
  if (price === undefined || !price.enabled || price.priceMicros === null) {
    return { kind: "unavailable", reason: "This model cannot be submitted at present (no price, or disabled)." }
  }
  if (price.rateCard === undefined) return { kind: "price", priceMicros: price.priceMicros }
  const defaulted = Object.fromEntries(
    fields.flatMap((field) =>
      input[field.name] !== undefined
        ? [[field.name, input[field.name]]]
        : field.default !== undefined
          ? [[field.name, field.default]]
          : []
    )
  )
  const rules = price.rateCard.filter((rule) => PriceList.matches(rule.when, defaulted))
  const rule = rules[0]
  if (rule === undefined || rules.length > 1) return { kind: "unavailable", reason: "This combination of options has no price." }
  if (rule.quantityField === undefined) return { kind: "price", priceMicros: rule.priceMicros }
  const quantity = PriceList.quantityOf(defaulted[rule.quantityField])
  return quantity === undefined
    ? { kind: "unavailable", reason: `Set ${rule.quantityField} to a whole number to see the price.` }
    : { kind: "price", priceMicros: rule.priceMicros * quantity }
}
