/**
 * The Pricer quotes a task from the current price list, compares the quote with the price the
 * caller was shown (PRICE_CHANGED), and computes the final charge of a succeeded task.
 *
 * The quote of a defaulted input: the model's entry must exist, be enabled and carry a price
 * (else MODEL_PRICE_UNAVAILABLE); without a rate card it is the flat `priceMicros`; with one,
 * the single matching rule's `priceMicros`, times the value of its `quantityField` if any.
 * The list is checked when loaded (see PriceList), so exactly one rule matches every valid
 * input; an input outside the Catalog's values is INVALID_MODEL_INPUT, never a guess.
 *
 * Settlement. A quote is what is reserved. A `fixed` quote is charged as is; a
 * `perDeliveredUnit` quote (gamma-imagine-2-0-text-to-image-economy: billed per image
 * delivered) charges `unitMicros × min(delivered, quantity)`, so never more than reserved.
 *
 * The list is held in a SynchronizedRef: `replace`, `setModel` and `disable` validate the
 * whole new list against the Catalog before it takes effect, one change at a time; a refused
 * change leaves the current list in place. Quotes already given keep their amounts.
 *
 * @example
 * ```ts
 * const admit = (slug: string, raw: unknown, expected: number | undefined) =>
 *   Effect.gen(function*() {
 *     const { input } = yield* (yield* Catalog.Catalog).validate(slug, raw)
 *     const pricer = yield* Pricer.Pricer
 *     const quote = yield* pricer.quote(slug, input)
 *     yield* pricer.checkExpected(quote, expected)
 *     return quote // reserve quote.priceMicros; at success charge pricer.settle(quote, delivered)
 *   })
 * ```
 */
import { readFile } from "node:fs/promises"
import { Context, Effect, Layer, Schema, SynchronizedRef } from "effect"
import defaultPrices from "../prices/default-prices.json" with { type: "json" }
import { Catalog } from "./Catalog.ts"
import * as Errors from "./Errors.ts"
import type { ModelInput } from "./ModelDefinition.ts"
import * as Money from "./Money.ts"
import { Micros } from "./Money.ts"
import * as PriceList from "./PriceList.ts"

/** A price fixed for one task: what to reserve, and how to settle it. */
export const Quote = Schema.Struct({
  model: Schema.String,
  /** The amount quoted and reserved: `unitMicros × quantity`. */
  priceMicros: Micros,
  /** The price of one unit; for a per-task price, the price itself. */
  unitMicros: Micros,
  /** How many units were quoted; 1 for a per-task price. */
  quantity: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  settlement: PriceList.Settlement
}).annotate({ identifier: "Quote" })
export type Quote = typeof Quote.Type

/** Quotes a validated, defaulted input from a loaded price list. */
export const quote = (
  list: PriceList.PriceList,
  slug: string,
  input: ModelInput
): Effect.Effect<Quote, Errors.ModelPriceUnavailable | Errors.InvalidModelInput> => {
  const entry = list.models[slug]
  if (entry === undefined) {
    return Effect.fail(
      new Errors.ModelPriceUnavailable({ message: `Model ${slug} is not in the price list and cannot be submitted.` })
    )
  }
  if (!entry.enabled) {
    return Effect.fail(
      new Errors.ModelPriceUnavailable({ message: `Model ${slug} is disabled in the price list and cannot be submitted at present.` })
    )
  }
  const rateCard = entry.rateCard
  if (rateCard === undefined) {
    const price = entry.priceMicros
    return price === undefined
      ? Effect.fail(
        new Errors.ModelPriceUnavailable({ message: `Model ${slug} has no price configured; it cannot be submitted.` })
      )
      : Effect.succeed({ model: slug, priceMicros: price, unitMicros: price, quantity: 1, settlement: "fixed" })
  }
  const [rule, ...others] = rateCard.filter((candidate) => PriceList.matches(candidate.when, input))
  if (rule === undefined || others.length > 0) {
    const tested = [...new Set(rateCard.flatMap((rule) => Object.keys(rule.when)))]
    const values = tested.map((field) => `${field}=${JSON.stringify(input[field] ?? null)}`).join(", ")
    return Effect.fail(
      new Errors.InvalidModelInput({ message: `input: ${values} is not a combination model ${slug} accepts` })
    )
  }
  const settlement = rule.settlement ?? "fixed"
  if (rule.quantityField === undefined) {
    return Effect.succeed({ model: slug, priceMicros: rule.priceMicros, unitMicros: rule.priceMicros, quantity: 1, settlement })
  }
  const quantity = PriceList.quantityOf(input[rule.quantityField])
  if (quantity === undefined || !Number.isSafeInteger(rule.priceMicros * quantity)) {
    return Effect.fail(
      new Errors.InvalidModelInput({ message: `input.${rule.quantityField}: must be a whole number within the model's range` })
    )
  }
  return Effect.succeed({
    model: slug,
    priceMicros: Money.multiply(rule.priceMicros, quantity),
    unitMicros: rule.priceMicros,
    quantity,
    settlement
  })
}

/**
 * Succeeds when the caller saw the quoted price, or gave none; otherwise PRICE_CHANGED, before
 * anything is reserved.
 */
export const checkExpected = (
  quote: Quote,
  expectedPriceMicros: number | undefined
): Effect.Effect<void, Errors.PriceChanged> =>
  expectedPriceMicros === undefined || expectedPriceMicros === quote.priceMicros
    ? Effect.void
    : Effect.fail(
      new Errors.PriceChanged({
        message: `The price of ${quote.model} is now ${quote.priceMicros} micros (${Money.formatUsd(quote.priceMicros)} USD), ` +
          `not the expected ${expectedPriceMicros} micros (${Money.formatUsd(expectedPriceMicros)} USD); show the new price and resubmit with expectedPriceMicros ${quote.priceMicros}.`
      })
    )

/**
 * The final charge of a succeeded task that delivered `delivered` units (a whole number):
 * the quote for `fixed`, `unitMicros × min(delivered, quantity)` for `perDeliveredUnit`.
 * Never more than `priceMicros`, the amount reserved. Throws RangeError for a `delivered` that
 * is not a non-negative safe integer (a programming error).
 */
export const settle = (
  quote: Pick<Quote, "priceMicros" | "unitMicros" | "quantity" | "settlement">,
  delivered: number
): Micros => {
  if (!Number.isSafeInteger(delivered) || delivered < 0) {
    throw new RangeError(`Not a count of delivered units: ${delivered}`)
  }
  return quote.settlement === "fixed" ? quote.priceMicros : Money.multiply(quote.unitMicros, Math.min(delivered, quote.quantity))
}

export class Pricer extends Context.Service<Pricer, {
  /** Quotes a validated input (defaults applied, as `Catalog.validate` returns it). */
  readonly quote: (slug: string, input: ModelInput) => Effect.Effect<
    Quote,
    Errors.ModelPriceUnavailable | Errors.InvalidModelInput
  >
  readonly checkExpected: typeof checkExpected
  readonly settle: typeof settle
  /** The price list in force (plain JSON data: it can be written back to a file as is). */
  readonly current: Effect.Effect<PriceList.PriceList>
  /** The body of GET /api/v1/prices for the list in force. */
  readonly prices: Effect.Effect<PriceList.PublicPrices>
  /** Replaces the whole list with raw JSON data, once it is valid. */
  readonly replace: (raw: unknown) => Effect.Effect<void, PriceList.PriceListInvalid>
  /** Sets (adds or overwrites) one model's entry, given as raw JSON data; the result must be valid. */
  readonly setModel: (slug: string, entry: unknown) => Effect.Effect<void, PriceList.PriceListInvalid>
  /** Stops a model from being quoted, keeping its prices; a model not listed gets `{ enabled: false }`. */
  readonly disable: (slug: string) => Effect.Effect<void, PriceList.PriceListInvalid>
}>()("@taskmeter/kernel/Pricer") {}

/** A Pricer over the given models, starting from raw price-list data. */
export const make = (
  models: ReadonlyArray<PriceList.PricedModel>,
  initial: unknown
): Effect.Effect<Pricer["Service"], PriceList.PriceListInvalid> =>
  Effect.gen(function*() {
    const ref = yield* SynchronizedRef.make(yield* PriceList.load(initial, models))
    const change = (next: (list: PriceList.PriceList) => unknown) =>
      SynchronizedRef.updateEffect(ref, (list) => PriceList.load(next(list), models))
    return Pricer.of({
      quote: (slug, input) => Effect.flatMap(SynchronizedRef.get(ref), (list) => quote(list, slug, input)),
      checkExpected,
      settle,
      current: SynchronizedRef.get(ref),
      prices: Effect.map(SynchronizedRef.get(ref), (list) => PriceList.toPublic(list, models)),
      replace: (raw) => change(() => raw),
      setModel: (slug, entry) => change((list) => ({ models: { ...list.models, [slug]: entry } })),
      disable: (slug) =>
        change((list) => ({ models: { ...list.models, [slug]: { ...list.models[slug], enabled: false } } }))
    })
  })

/** The Pricer with the given raw price-list data, checked against the Catalog. */
export const layer = (priceList: unknown): Layer.Layer<Pricer, PriceList.PriceListInvalid, Catalog> =>
  Layer.effect(Pricer, Catalog.use((catalog) => make(catalog.models, priceList)))

/** The Pricer with the price list read from a JSON file at start. */
export const layerFromFile = (path: string): Layer.Layer<Pricer, PriceList.PriceListInvalid, Catalog> =>
  Layer.unwrap(
    Effect.tryPromise({
      try: async () => JSON.parse(await readFile(path, "utf8")) as unknown,
      catch: (cause) => new PriceList.PriceListInvalid({ problems: [`${path}: cannot be read as JSON: ${String(cause)}`] })
    }).pipe(Effect.map(layer))
  )

/** The Pricer with the shipped defaults (prices/default-prices.json). */
export const layerDefault: Layer.Layer<Pricer, PriceList.PriceListInvalid, Catalog> = layer(defaultPrices)
