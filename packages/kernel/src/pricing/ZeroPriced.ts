/**
 * A Pricer that quotes some models at zero (e.g. those the simulated provider runs, under
 * SIMULATED_PRICE=zero) and shows them at zero on GET /api/v1/prices, leaving the operator's price
 * list as it is: a zero quote reserves, charges and releases zero, through the ledger as any other.
 */
import { Effect, Layer } from "effect"
import { ZERO } from "../domain/Money.ts"
import { Pricer } from "./Pricer.ts"

export const make = (pricer: Pricer["Service"], free: ReadonlySet<string>): Pricer["Service"] =>
  free.size === 0
    ? pricer
    : Pricer.of({
        ...pricer,
        quote: (slug, input) =>
          free.has(slug)
            ? Effect.map(pricer.quote(slug, input), (quote) => ({ ...quote, priceMicros: ZERO, unitMicros: ZERO }))
            : pricer.quote(slug, input),
        prices: Effect.map(pricer.prices, ({ models }) => ({
          models: models.map((entry) =>
            free.has(entry.model)
              ? {
                  ...entry,
                  priceMicros: entry.priceMicros === null ? null : ZERO,
                  ...(entry.rateCard === undefined
                    ? {}
                    : { rateCard: entry.rateCard.map((rule) => ({ ...rule, priceMicros: ZERO })) })
                }
              : entry
          )
        }))
      })

/** Replaces the Pricer below with one quoting `free` models at zero. */
export const layer = (free: ReadonlySet<string>): Layer.Layer<Pricer, never, Pricer> =>
  Layer.effect(
    Pricer,
    Effect.gen(function* () {
      return make(yield* Pricer, free)
    })
  )
