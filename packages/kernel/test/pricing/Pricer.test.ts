import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, Result } from "effect"
import * as Catalog from "../../src/catalog/Catalog.ts"
import type { ModelInput } from "../../src/catalog/Catalog.ts"
import * as Money from "../../src/domain/Money.ts"
import * as PriceList from "../../src/pricing/PriceList.ts"
import * as Pricer from "../../src/pricing/Pricer.ts"

const list = Result.getOrThrow(
  PriceList.decode({
    models: {
      flat: { enabled: true, priceMicros: 5000 },
      card: {
        enabled: true,
        rateCard: [
          { when: { resolution: ["1k", "2k"] }, priceMicros: 30000 },
          { when: { resolution: "4k" }, priceMicros: 45000 }
        ]
      },
      perImage: {
        enabled: true,
        rateCard: [{ when: {}, priceMicros: 20000, quantityField: "numImages", settlement: "perDeliveredUnit" }]
      },
      perSecond: {
        enabled: true,
        rateCard: [
          { when: { resolution: "480p" }, priceMicros: 50000, quantityField: "duration" },
          { when: { resolution: "720p" }, priceMicros: 80000, quantityField: "duration" }
        ]
      },
      off: { enabled: false, priceMicros: 5000 },
      unpriced: { enabled: true }
    }
  })
)

const quote = (slug: string, input: ModelInput = {}) => Pricer.quote(list, slug, input)

describe("Pricer.quote", () => {
  it.effect("quotes a flat price per task", () =>
    Effect.gen(function* () {
      expect(yield* quote("flat", { prompt: "x" })).toEqual({
        model: "flat",
        priceMicros: 5000,
        unitMicros: 5000,
        quantity: 1,
        settlement: "fixed"
      })
    })
  )

  it.effect("quotes the one rule whose when matches", () =>
    Effect.gen(function* () {
      expect((yield* quote("card", { resolution: "1k" })).priceMicros).toBe(30000)
      expect((yield* quote("card", { resolution: "2k" })).priceMicros).toBe(30000)
      expect((yield* quote("card", { resolution: "4k" })).priceMicros).toBe(45000)
    })
  )

  it.effect("multiplies by the quantity field, whether a numeric string or an integer", () =>
    Effect.gen(function* () {
      expect(yield* quote("perImage", { numImages: "3" })).toEqual({
        model: "perImage",
        priceMicros: 60000,
        unitMicros: 20000,
        quantity: 3,
        settlement: "perDeliveredUnit"
      })
      expect(yield* quote("perSecond", { resolution: "720p", duration: 10 })).toEqual({
        model: "perSecond",
        priceMicros: 800000,
        unitMicros: 80000,
        quantity: 10,
        settlement: "fixed"
      })
    })
  )

  it.effect("refuses absent, disabled and unpriced models with MODEL_PRICE_UNAVAILABLE naming the model", () =>
    Effect.gen(function* () {
      for (const slug of ["absent", "off", "unpriced"]) {
        const error = yield* Effect.flip(quote(slug))
        expect(error._tag).toBe("ModelPriceUnavailable")
        expect(error.code).toBe("MODEL_PRICE_UNAVAILABLE")
        expect(error.status).toBe(409)
        expect(error.message).toContain(`Model ${slug}`)
      }
      expect((yield* Effect.flip(quote("off"))).message).toContain("disabled")
    })
  )

  it.effect("refuses an input outside the model's values instead of guessing a price", () =>
    Effect.gen(function* () {
      const unmatched = yield* Effect.flip(quote("card", { resolution: "8k" }))
      expect(unmatched.code).toBe("INVALID_MODEL_INPUT")
      expect(unmatched.message).toContain(`resolution="8k"`)
      const badQuantity = yield* Effect.flip(quote("perImage", { numImages: "many" }))
      expect(badQuantity.code).toBe("INVALID_MODEL_INPUT")
      expect(badQuantity.message).toMatch(/^input\.numImages: /)
      const overflow = yield* Effect.flip(quote("perImage", { numImages: String(Number.MAX_SAFE_INTEGER) }))
      expect(overflow.code).toBe("INVALID_MODEL_INPUT")
    })
  )
})

describe("Pricer.checkExpected", () => {
  const fixed: Pricer.Quote = {
    model: "flat",
    priceMicros: Money.micros(40000),
    unitMicros: Money.micros(40000),
    quantity: 1,
    settlement: "fixed"
  }

  it.effect("passes when no price was shown or the shown price is the quote", () =>
    Effect.gen(function* () {
      yield* Pricer.checkExpected(fixed, undefined)
      yield* Pricer.checkExpected(fixed, 40000)
    })
  )

  it.effect("fails with PRICE_CHANGED giving both amounts when they differ", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Pricer.checkExpected(fixed, 30000))
      expect(error._tag).toBe("PriceChanged")
      expect(error.code).toBe("PRICE_CHANGED")
      expect(error.status).toBe(409)
      expect(error.message).toContain("40000")
      expect(error.message).toContain("0.040000 USD")
      expect(error.message).toContain("30000 micros (0.030000 USD)")
    })
  )
})

describe("Pricer.settle", () => {
  const perUnit = {
    priceMicros: Money.micros(100000),
    unitMicros: Money.micros(20000),
    quantity: 5,
    settlement: "perDeliveredUnit"
  } as const

  it("charges only the units delivered, never more than reserved", () => {
    expect(Pricer.settle(perUnit, 5)).toBe(100000)
    expect(Pricer.settle(perUnit, 3)).toBe(60000)
    expect(Pricer.settle(perUnit, 0)).toBe(0)
    expect(Pricer.settle(perUnit, 9)).toBe(100000)
  })

  it("charges a fixed quote as quoted", () => {
    const fixed = {
      priceMicros: Money.micros(800000),
      unitMicros: Money.micros(80000),
      quantity: 10,
      settlement: "fixed"
    } as const
    expect(Pricer.settle(fixed, 0)).toBe(800000)
    expect(Pricer.settle(fixed, 3)).toBe(800000)
  })

  it("refuses a delivered count that is not a whole number", () => {
    expect(() => Pricer.settle(perUnit, -1)).toThrow(RangeError)
    expect(() => Pricer.settle(perUnit, 1.5)).toThrow(RangeError)
  })
})

const ECONOMY = "gamma-imagine-2-0-text-to-image-economy"
const ALPHA = "alpha-2-text-to-image-economy"

const quoteValidated = (slug: string, raw: unknown) =>
  Effect.gen(function* () {
    const { input } = yield* (yield* Catalog.Catalog).validate(slug, raw)
    return yield* (yield* Pricer.Pricer).quote(slug, input)
  })

/** The problems of a change refused as an invalid list; any other failure fails the test. */
const problemsOf = (change: Effect.Effect<void, Pricer.ChangeError>) =>
  Effect.flatMap(Effect.flip(change), (error) =>
    error._tag === "PriceListInvalid" ? Effect.succeed(error.problems) : Effect.die(error)
  )

describe("the Pricer service", () => {
  it.effect("quotes Catalog-validated input with the shipped defaults, defaults applied", () =>
    Effect.gen(function* () {
      const one = yield* quoteValidated(ECONOMY, { prompt: "a fox" })
      expect(one).toMatchObject({ priceMicros: 20000, unitMicros: 20000, quantity: 1, settlement: "perDeliveredUnit" })
      const four = yield* quoteValidated(ECONOMY, { prompt: "a fox", numImages: "4" })
      expect(four.priceMicros).toBe(80000)
      const pricer = yield* Pricer.Pricer
      expect(pricer.settle(four, 3)).toBe(60000)
      expect((yield* quoteValidated(ALPHA, { prompt: "a fox" })).priceMicros).toBe(40000)
      expect((yield* quoteValidated(ALPHA, { prompt: "a fox", resolution: "4k" })).priceMicros).toBe(100000)
      expect((yield* quoteValidated("delta-omni-flash-text-to-video-economy", { prompt: "waves" })).priceMicros).toBe(600000)
    }).pipe(Effect.provide(Pricer.layerDefault.pipe(Layer.provideMerge(Catalog.layer))))
  )

  it.effect("replaces the list at run time; an invalid replacement changes nothing", () =>
    Effect.gen(function* () {
      const pricer = yield* Pricer.Pricer
      expect((yield* quoteValidated(ALPHA, { prompt: "a fox" })).priceMicros).toBe(1000)

      yield* pricer.replace({ models: { [ALPHA]: { enabled: true, priceMicros: 2000 } } })
      expect((yield* quoteValidated(ALPHA, { prompt: "a fox" })).priceMicros).toBe(2000)

      const refused = yield* Effect.flip(pricer.replace({ models: { [ALPHA]: { enabled: true, priceMicros: -1 } } }))
      expect(refused._tag).toBe("PriceListInvalid")
      expect((yield* quoteValidated(ALPHA, { prompt: "a fox" })).priceMicros).toBe(2000)
      expect(yield* pricer.current).toEqual({ models: { [ALPHA]: { enabled: true, priceMicros: 2000 } } })
    }).pipe(
      Effect.provide(
        Pricer.layer({ models: { [ALPHA]: { enabled: true, priceMicros: 1000 } } }).pipe(Layer.provideMerge(Catalog.layer))
      )
    )
  )

  it.effect("sets and disables one model for the admin path, checked like a whole list", () =>
    Effect.gen(function* () {
      const pricer = yield* Pricer.Pricer
      expect((yield* Effect.flip(quoteValidated(ECONOMY, { prompt: "a fox" }))).code).toBe("MODEL_PRICE_UNAVAILABLE")

      yield* pricer.setModel(ECONOMY, { enabled: true, rateCard: [{ when: {}, priceMicros: 10, quantityField: "numImages" }] })
      expect((yield* quoteValidated(ECONOMY, { prompt: "a fox", numImages: "12" })).priceMicros).toBe(120)

      const refused = yield* problemsOf(
        pricer.setModel(ECONOMY, { enabled: true, rateCard: [{ when: { numImages: "13" }, priceMicros: 1 }] })
      )
      expect(refused).toEqual([
        expect.stringMatching(
          /^models\.gamma-imagine-2-0-text-to-image-economy\.rateCard\[0\]\.when\.numImages: "13" never occurs/
        )
      ])

      yield* pricer.disable(ECONOMY)
      expect((yield* Effect.flip(quoteValidated(ECONOMY, { prompt: "a fox" }))).message).toContain("disabled")
      expect((yield* pricer.current).models[ECONOMY]?.rateCard).toHaveLength(1)

      yield* pricer.disable("song-lyrics")
      expect((yield* pricer.current).models["song-lyrics"]).toEqual({ enabled: false })
      expect(yield* problemsOf(pricer.disable("no-such-model"))).toEqual(["models.no-such-model: no model has this slug"])

      const view = yield* pricer.prices
      expect(view.models).toHaveLength(33)
      expect(view.models.find((entry) => entry.model === ECONOMY)).toMatchObject({ enabled: false, priceMicros: 10 })
    }).pipe(Effect.provide(Pricer.layer({ models: {} }).pipe(Layer.provideMerge(Catalog.layer))))
  )

  it.effect("updates part of one model's entry from the list in force; budgetOf reads the budget", () =>
    Effect.gen(function* () {
      const pricer = yield* Pricer.Pricer
      expect(yield* pricer.budgetOf(ALPHA)).toBeUndefined()
      yield* pricer.updateModel(ALPHA, (entry) => ({ ...entry, dailyBudgetMicros: 5_000_000 }))
      expect(yield* pricer.budgetOf(ALPHA)).toBe(5_000_000)
      expect((yield* pricer.current).models[ALPHA]).toEqual({ enabled: true, priceMicros: 1000, dailyBudgetMicros: 5_000_000 })
      expect((yield* quoteValidated(ALPHA, { prompt: "a fox" })).priceMicros).toBe(1000)

      // A model not listed is given to `update` as undefined.
      yield* pricer.updateModel("song-lyrics", (entry) => ({
        enabled: entry === undefined ? false : entry.enabled,
        dailyBudgetMicros: 7
      }))
      expect((yield* pricer.current).models["song-lyrics"]).toEqual({ enabled: false, dailyBudgetMicros: 7 })

      const refused = yield* problemsOf(pricer.updateModel(ALPHA, (entry) => ({ ...entry, dailyBudgetMicros: 0 })))
      expect(refused).toEqual([expect.stringMatching(new RegExp(`^models\\.${ALPHA}\\.dailyBudgetMicros: `))])
      expect(yield* pricer.budgetOf(ALPHA)).toBe(5_000_000)
      expect(yield* pricer.budgetOf("no-such-model")).toBeUndefined()
    }).pipe(
      Effect.provide(
        Pricer.layer({ models: { [ALPHA]: { enabled: true, priceMicros: 1000 } } }).pipe(Layer.provideMerge(Catalog.layer))
      )
    )
  )

  it.effect("fails to build with PriceListInvalid when the list does not fit the Catalog", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Effect.provide(
          Pricer.Pricer.use(Effect.succeed),
          Pricer.layer({
            models: { [ALPHA]: { enabled: true, rateCard: [{ when: { resolution: "1k" }, priceMicros: 1 }] } }
          }).pipe(Layer.provide(Catalog.layer))
        )
      )
      expect(error.problems).toEqual([`models.${ALPHA}.rateCard: no rule matches resolution "2k"; resolution "4k"`])
    })
  )
})

describe("Pricer.layerFromFile", () => {
  const dir = mkdtempSync(join(tmpdir(), "taskmeter-prices-"))
  const fileWith = (name: string, text: string) => {
    const path = join(dir, name)
    writeFileSync(path, text)
    return path
  }
  const build = (path: string) =>
    Effect.provide(Pricer.Pricer.use(Effect.succeed), Pricer.layerFromFile(path).pipe(Layer.provide(Catalog.layer)))

  it.effect("reads and checks a JSON price list file", () =>
    Effect.gen(function* () {
      const pricer = yield* build(
        fileWith("ok.json", JSON.stringify({ models: { "song-lyrics": { enabled: true, priceMicros: 7000 } } }))
      )
      expect((yield* pricer.quote("song-lyrics", { prompt: "rain" })).priceMicros).toBe(7000)
    })
  )

  it.effect("fails with PriceListInvalid for a missing file, a file that is not JSON, or an invalid list", () =>
    Effect.gen(function* () {
      const missing = yield* Effect.flip(build(join(dir, "missing.json")))
      expect(missing.problems[0]).toMatch(/missing\.json: cannot be read as JSON: .*ENOENT/)
      const notJson = yield* Effect.flip(build(fileWith("bad.json", "{ models: ")))
      expect(notJson.problems[0]).toMatch(/bad\.json: cannot be read as JSON: SyntaxError/)
      const invalid = yield* Effect.flip(build(fileWith("invalid.json", JSON.stringify({ models: { nope: { enabled: true } } }))))
      expect(invalid.problems).toEqual(["models.nope: no model has this slug"])
    })
  )
})
