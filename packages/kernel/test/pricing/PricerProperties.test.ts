import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Result } from "effect"
import fc from "fast-check"
import defaultPrices from "../../prices/default-prices.json" with { type: "json" }
import * as Catalog from "../../src/catalog/Catalog.ts"
import * as PriceList from "../../src/pricing/PriceList.ts"
import * as Pricer from "../../src/pricing/Pricer.ts"

const catalog = Effect.runSync(Catalog.Catalog.use(Effect.succeed).pipe(Effect.provide(Catalog.layer)))
const pricer = Effect.runSync(Pricer.make(catalog.models, defaultPrices))

const MEDIA = ["https://example.com/image.png", "media:0b0e4a8e-6f57-4c7e-9a0e-3f1d2c4b5a69"]

/** Any value a field accepts. */
const valueOf = (field: Catalog.FieldInfo): fc.Arbitrary<unknown> => {
  if (field.options !== undefined) return fc.constantFrom(...field.options)
  if (field.type === "integer") return fc.integer({ min: field.minimum ?? 0, max: field.maximum ?? 100 })
  if (field.type === "array") {
    const counts = field.allowedCounts ?? Array.from({ length: field.maxItems ?? 1 }, (_, i) => i + 1)
    return fc
      .constantFrom(...counts.filter((n) => n >= (field.minItems ?? 0)))
      .chain((n) => fc.array(fc.constantFrom(...MEDIA), { minLength: n, maxLength: n }))
  }
  if (field.media) return fc.constantFrom(...MEDIA)
  return fc
    .string({ minLength: Math.max(field.minLength ?? 0, 1), maxLength: Math.min(field.maxLength ?? 60, 60) })
    .filter((text) => text.trim().length > 0)
}

/** A model and any valid input for it, fields with a default or optional left out at random. */
const modelAndInput = fc.constantFrom(...catalog.models).chain((model) =>
  fc
    .record(Object.fromEntries(model.fields.map((field) => [field.name, valueOf(field)])), {
      requiredKeys: model.fields.filter((f) => f.required && f.default === undefined).map((f) => f.name)
    })
    .map((input) => ({ model, input }))
)

describe("quotes from the shipped price list", () => {
  it("are non-negative safe integers, consistent and deterministic for every model and valid input", () => {
    fc.assert(
      fc.property(modelAndInput, ({ input, model }) => {
        const { input: defaulted } = Effect.runSync(catalog.validate(model.slug, input))
        const first = Effect.runSync(pricer.quote(model.slug, defaulted))
        const again = Effect.runSync(pricer.quote(model.slug, structuredClone(defaulted)))
        expect(again).toEqual(first)
        expect(Number.isSafeInteger(first.priceMicros) && first.priceMicros >= 0).toBe(true)
        expect(first.priceMicros).toBe(first.unitMicros * first.quantity)
        expect(pricer.settle(first, first.quantity)).toBe(first.priceMicros)
      }),
      { numRuns: 2000 }
    )
  })
})

/** A small model whose whole input space can be enumerated, to check the loader against brute force. */
const small: PriceList.PricedModel = {
  slug: "small",
  fields: [
    { name: "resolution", type: "string", required: true, options: ["1k", "2k", "4k"], default: "1k" },
    { name: "numImages", type: "string", required: true, options: ["1", "2", "3"], default: "1" },
    { name: "style", type: "string", required: false, options: ["a", "b"] }
  ]
}
const everyInput = ["1k", "2k", "4k"].flatMap((resolution) =>
  ["1", "2", "3"].flatMap((numImages) => [
    { resolution, numImages },
    { resolution, numImages, style: "a" },
    { resolution, numImages, style: "b" }
  ])
)

const condition = (values: ReadonlyArray<string | null>) =>
  fc.subarray([...values], { minLength: 1 }).map((chosen) => (chosen.length === 1 ? chosen[0]! : chosen))
const when = fc.record(
  { resolution: condition(["1k", "2k", "4k"]), numImages: condition(["1", "2", "3"]), style: condition(["a", "b", null]) },
  { requiredKeys: [] }
)
const price = fc.integer({ min: 0, max: 1_000_000 })
const randomCard = fc.array(
  fc
    .record({ when, priceMicros: price, quantityField: fc.constantFrom(undefined, "numImages") })
    .map(({ quantityField, ...rule }) => (quantityField === undefined ? rule : { ...rule, quantityField })),
  { minLength: 1, maxLength: 4 }
)

/** Splits a field's values into non-empty groups. */
const partition = (values: ReadonlyArray<string | null>) =>
  fc
    .array(fc.integer({ min: 0, max: 2 }), { minLength: values.length, maxLength: values.length })
    .map((groupOf) => [0, 1, 2].map((g) => values.filter((_, i) => groupOf[i] === g)).filter((group) => group.length > 0))

/** One rule per cell of a grid of partitions (a valid card), sometimes with a rule dropped or widened. */
const gridCard = fc
  .tuple(
    fc.subarray(["resolution", "numImages", "style"] as const, { minLength: 1, maxLength: 2 }),
    partition(["1k", "2k", "4k"]),
    partition(["1", "2", "3"]),
    partition(["a", "b", null]),
    fc.constantFrom("exact", "drop", "widen"),
    price
  )
  .map(([fields, resolution, numImages, style, mutation, priceMicros]) => {
    const groups = { resolution, numImages, style }
    const cells = fields.reduce<Array<Record<string, ReadonlyArray<string | null>>>>(
      (partial, field) => partial.flatMap((cell) => groups[field].map((group) => ({ ...cell, [field]: group }))),
      [{}]
    )
    const rules = cells.map((when) => ({ when, priceMicros }))
    if (mutation === "drop" && rules.length > 1) rules.pop()
    if (mutation === "widen" && rules.length > 1) {
      const [field, values] = Object.entries(rules[0]!.when)[0]!
      rules[1] = {
        ...rules[1]!,
        when: { ...rules[1]!.when, [field]: [...new Set([...(rules[1]!.when[field] ?? []), ...values])] }
      }
    }
    return rules
  })
const rateCard = fc.oneof(randomCard, gridCard)

describe("the exactly-one-rule check", () => {
  it("loads a rate card exactly when every input matches one rule, and then every input quotes", () => {
    const outcomes = { loads: 0, refused: 0 }
    fc.assert(
      fc.property(rateCard, (rules) => {
        const raw = { models: { small: { enabled: true, rateCard: rules } } }
        const exactlyOne = everyInput.every((input) => rules.filter((rule) => PriceList.matches(rule.when, input)).length === 1)
        const loaded = Effect.runSyncExit(PriceList.load(raw, [small]))
        outcomes[exactlyOne ? "loads" : "refused"]++
        expect(Exit.isSuccess(loaded)).toBe(exactlyOne)
        if (Exit.isSuccess(loaded)) {
          for (const input of everyInput) {
            expect(Result.isSuccess(Effect.runSync(Effect.result(Pricer.quote(loaded.value, "small", input))))).toBe(true)
          }
        }
      }),
      { numRuns: 3000 }
    )
    // Both sides of the equivalence must have been exercised for the property to mean anything.
    expect(outcomes.loads).toBeGreaterThan(100)
    expect(outcomes.refused).toBeGreaterThan(100)
  })
})
