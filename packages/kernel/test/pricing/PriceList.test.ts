import { describe, expect, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import defaultPrices from "../../prices/default-prices.json" with { type: "json" }
import * as Catalog from "../../src/catalog/Catalog.ts"
import * as PriceList from "../../src/pricing/PriceList.ts"

/** A model with one field of every kind pricing cares about, as plain data. */
const model: PriceList.PricedModel = {
  slug: "test-image",
  fields: [
    { name: "prompt", type: "string", required: true },
    { name: "resolution", type: "string", required: true, options: ["1k", "2k", "4k"], default: "1k" },
    { name: "aspectRatio", type: "string", required: false, options: ["1:1", "16:9"] },
    { name: "numImages", type: "string", required: true, options: ["1", "2", "3"], default: "1" },
    { name: "duration", type: "integer", required: true, minimum: 6, maximum: 15, default: 6 },
    { name: "seed", type: "integer", required: false },
    { name: "imageUrls", type: "array", required: false }
  ]
}
const other: PriceList.PricedModel = { slug: "test-song", fields: [{ name: "prompt", type: "string", required: true }] }
const models = [model, other]

const withCard = (rateCard: ReadonlyArray<unknown>) => ({ models: { "test-image": { enabled: true, rateCard } } })

/** The problems of raw data, decoding and checking against the test models; [] when it loads. */
const problemsOf = (raw: unknown): ReadonlyArray<string> => {
  const decoded = PriceList.decode(raw)
  return Result.isFailure(decoded) ? decoded.failure.problems : PriceList.problems(decoded.success, models)
}

describe("PriceList.matches", () => {
  it("tests equality, lists as one-of, ANDs the fields, and {} matches everything", () => {
    const input = { resolution: "2k", numImages: "3" }
    expect(PriceList.matches({ resolution: "2k" }, input)).toBe(true)
    expect(PriceList.matches({ resolution: "1k" }, input)).toBe(false)
    expect(PriceList.matches({ resolution: ["1k", "2k"] }, input)).toBe(true)
    expect(PriceList.matches({ resolution: "2k", numImages: "1" }, input)).toBe(false)
    expect(PriceList.matches({ resolution: "2k", numImages: ["2", "3"] }, input)).toBe(true)
    expect(PriceList.matches({}, input)).toBe(true)
  })

  it("compares values with their type and reads null as an omitted field", () => {
    expect(PriceList.matches({ duration: 6 }, { duration: 6 })).toBe(true)
    expect(PriceList.matches({ duration: "6" }, { duration: 6 })).toBe(false)
    expect(PriceList.matches({ aspectRatio: null }, {})).toBe(true)
    expect(PriceList.matches({ aspectRatio: [null, "1:1"] }, { aspectRatio: "1:1" })).toBe(true)
    expect(PriceList.matches({ aspectRatio: null }, { aspectRatio: "1:1" })).toBe(false)
  })
})

describe("PriceList.quantityOf", () => {
  it("reads whole numbers from integers and decimal strings, and nothing else", () => {
    expect(PriceList.quantityOf("12")).toBe(12)
    expect(PriceList.quantityOf(6)).toBe(6)
    for (const bad of ["0", "01", "1.5", " 2", "", 0, -1, 1.5, null, undefined, "1e3", 2 ** 60]) {
      expect(PriceList.quantityOf(bad)).toBeUndefined()
    }
  })
})

describe("PriceList.load", () => {
  it("accepts flat prices, rate cards, lists, null for an omittable field and a quantity field", () => {
    expect(
      problemsOf({
        models: {
          "test-song": { enabled: true, priceMicros: 5000 },
          "test-image": {
            enabled: true,
            rateCard: [
              { when: { resolution: ["1k", "2k"], aspectRatio: [null, "1:1"] }, priceMicros: 30000, quantityField: "numImages" },
              { when: { resolution: ["1k", "2k"], aspectRatio: "16:9" }, priceMicros: 35000, quantityField: "numImages" },
              { when: { resolution: "4k" }, priceMicros: 10000, quantityField: "duration", settlement: "fixed" }
            ]
          }
        }
      })
    ).toEqual([])
  })

  it("accepts entries that cannot be quoted: disabled, or without any price", () => {
    expect(problemsOf({ models: { "test-song": { enabled: true }, "test-image": { enabled: false, priceMicros: 1 } } })).toEqual(
      []
    )
  })

  it("reports every schema problem at once, each with its path", () => {
    const problems = problemsOf({
      models: {
        "test-song": { enabled: "yes", priceMicros: -5 },
        "test-image": { enabled: true, rateCard: [] },
        "test-other": { enabled: true, price: 3 }
      }
    })
    expect(problems).toHaveLength(4)
    expect(problems[0]).toMatch(/^models\.test-song\.enabled: /)
    expect(problems[1]).toMatch(/^models\.test-song\.priceMicros: /)
    expect(problems[2]).toMatch(/^models\.test-image\.rateCard: .*at least 1/)
    expect(problems[3]).toMatch(/^models\.test-other\.price: /)
  })

  it("refuses fractional prices, empty value lists and non-objects", () => {
    expect(problemsOf({ models: { "test-song": { enabled: true, priceMicros: 1.5 } } })).toHaveLength(1)
    expect(problemsOf(withCard([{ when: { resolution: [] }, priceMicros: 1 }]))).toHaveLength(1)
    expect(problemsOf([])).toHaveLength(1)
  })

  it("refuses unknown slugs and entries with both a flat price and a rate card", () => {
    expect(problemsOf({ models: { "no-such-model": { enabled: true, priceMicros: 1 } } })).toEqual([
      "models.no-such-model: no model has this slug"
    ])
    expect(
      problemsOf({
        models: { "test-image": { enabled: true, priceMicros: 1, rateCard: [{ when: {}, priceMicros: 1 }] } }
      })
    ).toEqual([expect.stringMatching(/^models\.test-image: give priceMicros or rateCard, not both/)])
  })

  it("refuses when-fields the model does not have, values outside their options and untestable fields", () => {
    expect(problemsOf(withCard([{ when: { quality: "high" }, priceMicros: 1 }]))).toEqual([
      `models.test-image.rateCard[0].when.quality: model test-image has no field "quality"`
    ])
    expect(problemsOf(withCard([{ when: { resolution: ["1k", "8k"] }, priceMicros: 1 }]))).toEqual([
      `models.test-image.rateCard[0].when.resolution: "8k" never occurs; "resolution" is one of "1k", "2k", "4k"`
    ])
    expect(problemsOf(withCard([{ when: { duration: "6" }, priceMicros: 1 }]))).toEqual([
      expect.stringMatching(/^models\.test-image\.rateCard\[0\]\.when\.duration: "6" never occurs; .* is one of 6, 7/)
    ])
    expect(problemsOf(withCard([{ when: { resolution: null }, priceMicros: 1 }]))).toEqual([
      expect.stringMatching(/when\.resolution: omitted never occurs/)
    ])
    for (const field of ["prompt", "seed", "imageUrls"]) {
      expect(problemsOf(withCard([{ when: { [field]: "x" }, priceMicros: 1 }]))).toEqual([
        `models.test-image.rateCard[0].when.${field}: "${field}" has no finite set of values (no options, no integer range) and cannot be tested`
      ])
    }
  })

  it("refuses a rate card under which some input matches no rule, naming the combination", () => {
    const problems = problemsOf(
      withCard([
        { when: { resolution: "1k" }, priceMicros: 1 },
        { when: { resolution: "2k" }, priceMicros: 2 }
      ])
    )
    expect(problems).toEqual([`models.test-image.rateCard: no rule matches resolution "4k"`])
  })

  it("counts an omitted field as a value of its own", () => {
    const problems = problemsOf(
      withCard([
        { when: { aspectRatio: "1:1" }, priceMicros: 1 },
        { when: { aspectRatio: "16:9" }, priceMicros: 2 }
      ])
    )
    expect(problems).toEqual([`models.test-image.rateCard: no rule matches aspectRatio omitted`])
  })

  it("refuses a rate card under which some input matches several rules, naming them", () => {
    const problems = problemsOf(
      withCard([
        { when: {}, priceMicros: 1 },
        { when: { resolution: "4k" }, priceMicros: 2 }
      ])
    )
    expect(problems).toEqual([`models.test-image.rateCard: more than one rule matches: rules 0 and 1 all match resolution "4k"`])
  })

  it("summarises many failing combinations", () => {
    const problems = problemsOf(withCard([{ when: { resolution: "1k", duration: 6 }, priceMicros: 1 }]))
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatch(
      /^models\.test-image\.rateCard: no rule matches resolution "2k", duration 6; .*; and 26 more combinations$/
    )
  })

  it("refuses quantity fields that are not always a whole number of at least 1", () => {
    const problemFor = (quantityField: string) => problemsOf(withCard([{ when: {}, priceMicros: 1, quantityField }]))
    expect(problemFor("count")).toEqual([`models.test-image.rateCard[0].quantityField: model test-image has no field "count"`])
    expect(problemFor("resolution")).toEqual([expect.stringMatching(/its option "1k" is not one$/)])
    expect(problemFor("aspectRatio")).toEqual([expect.stringMatching(/optional without a default$/)])
    expect(problemFor("seed")).toEqual([expect.stringMatching(/optional without a default$/)])
    expect(problemFor("prompt")).toEqual([expect.stringMatching(/with a stated maximum; it is a string without such bounds$/)])
    expect(problemFor("numImages")).toEqual([])
    expect(problemFor("duration")).toEqual([])
  })

  it("refuses a price that could overflow the safe-integer range with the largest quantity", () => {
    const huge = Math.floor(Number.MAX_SAFE_INTEGER / 10)
    expect(problemsOf(withCard([{ when: {}, priceMicros: huge, quantityField: "duration" }]))).toEqual([
      `models.test-image.rateCard[0].priceMicros: ${huge} × 15 duration exceeds the largest safe amount`
    ])
    expect(problemsOf(withCard([{ when: {}, priceMicros: huge, quantityField: "numImages" }]))).toEqual([])
  })

  it("refuses per-delivered-unit settlement without a quantity to count", () => {
    expect(problemsOf(withCard([{ when: {}, priceMicros: 1, settlement: "perDeliveredUnit" }]))).toEqual([
      `models.test-image.rateCard[0].settlement: "perDeliveredUnit" needs a quantityField, which counts the units`
    ])
  })

  it("accepts a positive daily budget on any entry and refuses any other amount, naming it", () => {
    expect(
      problemsOf({
        models: {
          "test-song": { enabled: true, priceMicros: 5000, dailyBudgetMicros: 100_000_000 },
          "test-image": { enabled: false, dailyBudgetMicros: Number.MAX_SAFE_INTEGER }
        }
      })
    ).toEqual([])
    const budgetOf = (dailyBudgetMicros: unknown) =>
      problemsOf({ models: { "test-song": { enabled: true, priceMicros: 5000, dailyBudgetMicros } } })
    for (const bad of [0, -1, 1.5, Number.MAX_SAFE_INTEGER + 1, 1e300]) {
      expect(budgetOf(bad), String(bad)).toEqual([
        "models.test-song.dailyBudgetMicros: must be a whole number of USD micro-units from 1 to 9007199254740991"
      ])
    }
    for (const bad of ["100", null]) {
      expect(budgetOf(bad)).toEqual([expect.stringMatching(/^models\.test-song\.dailyBudgetMicros: Expected number/)])
    }
  })

  it.effect("reports the problems of every model together, in one PriceListInvalid", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        PriceList.load(
          {
            models: {
              "test-image": { enabled: true, rateCard: [{ when: { resolution: "1k" }, priceMicros: 1 }] },
              "test-song": { enabled: true, rateCard: [{ when: { mood: "sad" }, priceMicros: 1 }] },
              nope: { enabled: false }
            }
          },
          models
        )
      )
      expect(error._tag).toBe("PriceListInvalid")
      expect(error.problems).toHaveLength(3)
      expect(error.message).toContain("- models.nope: no model has this slug")
    })
  )
})

describe("PriceList.toPublic", () => {
  it("lists every model in Catalog order with a from-price, the rate card and availability", () => {
    const list = Result.getOrThrow(
      PriceList.decode(
        withCard([
          { when: { resolution: ["1k", "2k"] }, priceMicros: 7000, quantityField: "numImages" },
          { when: { resolution: "4k" }, priceMicros: 1000, quantityField: "duration" }
        ])
      )
    )
    expect(PriceList.toPublic(list, models)).toEqual({
      models: [
        { model: "test-image", enabled: true, currency: "USD", priceMicros: 6000, rateCard: list.models["test-image"]!.rateCard },
        { model: "test-song", enabled: false, currency: "USD", priceMicros: null }
      ]
    })
  })

  it("takes the smallest quantity a rule's when lets through", () => {
    const list = Result.getOrThrow(
      PriceList.decode(
        withCard([
          { when: { numImages: "1" }, priceMicros: 9000, quantityField: "numImages" },
          { when: { numImages: ["2", "3"] }, priceMicros: 4000, quantityField: "numImages" }
        ])
      )
    )
    expect(PriceList.toPublic(list, [model]).models[0]!.priceMicros).toBe(8000)
  })

  it("leaves daily budgets out: they are the operator's", () => {
    const list = Result.getOrThrow(
      PriceList.decode({
        models: { "test-song": { enabled: true, priceMicros: 10, dailyBudgetMicros: 1_000 } }
      })
    )
    expect(PriceList.toPublic(list, [other]).models).toEqual([
      { model: "test-song", enabled: true, currency: "USD", priceMicros: 10 }
    ])
  })

  it("shows a disabled or unpriced model as not enabled", () => {
    const list = Result.getOrThrow(
      PriceList.decode({
        models: { "test-image": { enabled: false, priceMicros: 10 }, "test-song": { enabled: true } }
      })
    )
    expect(PriceList.toPublic(list, models).models).toEqual([
      { model: "test-image", enabled: false, currency: "USD", priceMicros: 10 },
      { model: "test-song", enabled: false, currency: "USD", priceMicros: null }
    ])
  })
})

describe("the shipped default price list", () => {
  it.effect("loads clean against the real Catalog and prices every one of its models", () =>
    Effect.gen(function* () {
      const { models: all } = yield* Catalog.Catalog
      const list = yield* PriceList.load(defaultPrices, all)
      expect(Object.keys(list.models).sort()).toEqual(all.map((m) => m.slug).sort())
      expect(all).toHaveLength(33)
      const view = PriceList.toPublic(list, all)
      expect(view.models.every((entry) => entry.enabled && entry.priceMicros !== null && entry.priceMicros > 0)).toBe(true)
    }).pipe(Effect.provide(Catalog.layer))
  )
})
