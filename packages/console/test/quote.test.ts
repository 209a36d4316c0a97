/**
 * The playground's request and quote (src/browser/quote.ts): the input built from form values as
 * the API takes it, and the price computed from the public price list by the Pricer's rules,
 * compared with the Pricer's own quote for the same defaulted input.
 */
import { Effect } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { type ModelField, Money, PriceList, Pricer } from "@taskmeter/kernel"
import { initialValues, inputOf, quote } from "../src/browser/quote.ts"

const fields: ReadonlyArray<ModelField.FieldInfo> = [
  { name: "prompt", type: "string", required: true, media: false, maxLength: 100 },
  { name: "duration", type: "string", required: true, media: false, options: ["4", "6", "8"], default: "6" },
  { name: "seed", type: "integer", required: false, media: false, minimum: 0, maximum: 10 },
  { name: "imageUrls", type: "array", items: "string", required: false, media: true }
]

const rateCard: PriceList.PriceList = {
  models: {
    clip: {
      enabled: true,
      rateCard: [
        { when: { duration: ["4", "6"] }, priceMicros: Money.micros(10_000), quantityField: "duration" },
        { when: { duration: "8" }, priceMicros: Money.micros(90_000) }
      ]
    }
  }
}

describe("the playground's input", () => {
  it("types values by field and leaves empty optional fields out", () => {
    const values = { ...initialValues(fields), prompt: "waves", seed: "7", imageUrls: ["media:a", " ", "https://x.test/b.png"] }
    expect(inputOf(fields, values)).toEqual({
      prompt: "waves",
      duration: "6",
      seed: 7,
      imageUrls: ["media:a", "https://x.test/b.png"]
    })
    expect(inputOf(fields, { ...initialValues(fields), duration: "" })).toEqual({})
  })
})

describe("the playground's quote", () => {
  const publicPrice = (list: PriceList.PriceList, slug: string) => PriceList.toPublic(list, [{ slug, fields }]).models[0]

  it.effect("is what the Pricer quotes, for a flat price and along a rate card", () =>
    Effect.gen(function* () {
      for (const duration of ["4", "6", "8"]) {
        const input = { prompt: "waves", duration }
        const expected = yield* Pricer.quote(rateCard, "clip", input)
        expect(quote(publicPrice(rateCard, "clip"), fields, input)).toEqual({ kind: "price", priceMicros: expected.priceMicros })
      }
      // The default applies when the field is left out.
      expect(quote(publicPrice(rateCard, "clip"), fields, { prompt: "waves" })).toEqual({ kind: "price", priceMicros: 60_000 })
      const flat: PriceList.PriceList = { models: { clip: { enabled: true, priceMicros: Money.micros(25_000) } } }
      expect(quote(publicPrice(flat, "clip"), fields, {})).toEqual({ kind: "price", priceMicros: 25_000 })
    })
  )

  it("says when a model cannot be submitted", () => {
    const disabled: PriceList.PriceList = { models: { clip: { enabled: false, priceMicros: Money.micros(1) } } }
    expect(quote(publicPrice(disabled, "clip"), fields, {}).kind).toBe("unavailable")
    expect(quote(undefined, fields, {}).kind).toBe("unavailable")
  })
})
