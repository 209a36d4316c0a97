import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Catalog from "../../src/catalog/Catalog.ts"
import * as Pricer from "../../src/pricing/Pricer.ts"
import * as ZeroPriced from "../../src/pricing/ZeroPriced.ts"

const FREE = "alpha-pro-text-to-image-economy"
const PAID = "song-lyrics"

const pricers = Layer.mergeAll(Catalog.layer, Pricer.layerDefault.pipe(Layer.provide(Catalog.layer)))

describe("ZeroPriced", () => {
  it.effect("quotes and lists the free models at zero, keeping units and settlement; others as the list says", () =>
    Effect.gen(function* () {
      const list = yield* Pricer.Pricer
      const zero = ZeroPriced.make(list, new Set([FREE]))
      const input = { prompt: "a lighthouse", aspectRatio: "9:16", resolution: "4k" }
      const listed = yield* list.quote(FREE, input)
      expect(listed.priceMicros).toBeGreaterThan(0)
      expect(yield* zero.quote(FREE, input)).toEqual({ ...listed, priceMicros: 0, unitMicros: 0 })
      expect(yield* zero.quote(PAID, { prompt: "x" })).toEqual(yield* list.quote(PAID, { prompt: "x" }))

      const prices = (yield* zero.prices).models
      const free = prices.find((p) => p.model === FREE)
      expect(free?.priceMicros).toBe(0)
      expect(free?.rateCard?.every((rule) => rule.priceMicros === 0)).toBe(true)
      expect(prices.find((p) => p.model === PAID)).toEqual((yield* list.prices).models.find((p) => p.model === PAID))
      // The operator's list itself is untouched.
      expect(yield* zero.current).toEqual(yield* list.current)
      expect(ZeroPriced.make(list, new Set())).toBe(list)
    }).pipe(Effect.provide(pricers))
  )
})
