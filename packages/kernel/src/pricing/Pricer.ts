/**
 * The Pricer quotes a defaulted input from the current price list (MODEL_PRICE_UNAVAILABLE when
 * the model has no usable entry), checks the price the caller was shown (PRICE_CHANGED), and
 * settles a succeeded task (`settle`: never more than the quote). `layerStore` keeps the list in
 * the PriceStore shared by every process; `layer`, `layerDefault` and `layerFromFile` hold a fixed
 * list in this process. Changes are validated whole first: docs/decisions.md, Prices.
 */
import { readFile } from "node:fs/promises"
import { Context, Duration, Effect, Layer, Schema, SynchronizedRef } from "effect"
import type { Scope } from "effect"
import defaultPrices from "../../prices/default-prices.json" with { type: "json" }
import { Catalog } from "../catalog/Catalog.ts"
import * as Errors from "../domain/Errors.ts"
import type { ModelInput } from "../catalog/ModelDefinition.ts"
import * as Money from "../domain/Money.ts"
import { Micros } from "../domain/Money.ts"
import * as FollowedList from "./FollowedList.ts"
import * as PriceList from "./PriceList.ts"
import { type PriceListConflict, PriceStore } from "./PriceStore.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"

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

/** INVALID_MODEL_INPUT of one problem. */
const invalidInput = (model: string, problem: string) =>
  new Errors.InvalidModelInput({ message: problem, model, problems: [problem] })

/** Quotes a validated, defaulted input from a loaded price list. */
export const quote = (
  list: PriceList.PriceList,
  slug: string,
  input: ModelInput
): Effect.Effect<Quote, Errors.ModelPriceUnavailable | Errors.InvalidModelInput> => {
  const entry = list.models[slug]
  if (entry === undefined) {
    return Effect.fail(
      new Errors.ModelPriceUnavailable({
        message: `Model ${slug} is not in the price list and cannot be submitted.`,
        model: slug
      })
    )
  }
  if (!entry.enabled) {
    return Effect.fail(
      new Errors.ModelPriceUnavailable({
        message: `Model ${slug} is disabled in the price list and cannot be submitted at present.`,
        model: slug
      })
    )
  }
  const rateCard = entry.rateCard
  if (rateCard === undefined) {
    const price = entry.priceMicros
    return price === undefined
      ? Effect.fail(
          new Errors.ModelPriceUnavailable({
            message: `Model ${slug} has no price configured; it cannot be submitted.`,
            model: slug
          })
        )
      : Effect.succeed({ model: slug, priceMicros: price, unitMicros: price, quantity: 1, settlement: "fixed" })
  }
  const [rule, ...others] = rateCard.filter((candidate) => PriceList.matches(candidate.when, input))
  if (rule === undefined || others.length > 0) {
    const tested = [...new Set(rateCard.flatMap((rule) => Object.keys(rule.when)))]
    const values = tested.map((field) => `${field}=${JSON.stringify(input[field] ?? null)}`).join(", ")
    return Effect.fail(invalidInput(slug, `input: ${values} is not a combination model ${slug} accepts`))
  }
  const settlement = rule.settlement ?? "fixed"
  if (rule.quantityField === undefined) {
    return Effect.succeed({ model: slug, priceMicros: rule.priceMicros, unitMicros: rule.priceMicros, quantity: 1, settlement })
  }
  const quantity = PriceList.quantityOf(input[rule.quantityField])
  if (quantity === undefined || !Number.isSafeInteger(rule.priceMicros * quantity)) {
    return Effect.fail(invalidInput(slug, `input.${rule.quantityField}: must be a whole number within the model's range`))
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
export const checkExpected = (quote: Quote, expectedPriceMicros: number | undefined): Effect.Effect<void, Errors.PriceChanged> =>
  expectedPriceMicros === undefined || expectedPriceMicros === quote.priceMicros
    ? Effect.void
    : Effect.fail(
        new Errors.PriceChanged({
          message:
            `The price of ${quote.model} is now ${quote.priceMicros} micros (${Money.formatUsd(quote.priceMicros)} USD), ` +
            `not the expected ${expectedPriceMicros} micros (${Money.formatUsd(expectedPriceMicros)} USD); show the new price and resubmit with expectedPriceMicros ${quote.priceMicros}.`,
          model: quote.model,
          expectedPriceMicros,
          priceMicros: quote.priceMicros
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

/** Why a price change was not made: the new list is invalid, or the store did not take it. */
export type ChangeError = PriceList.PriceListInvalid | PriceListConflict | StoreUnavailable

export class Pricer extends Context.Service<
  Pricer,
  {
    /** Quotes a validated input (defaults applied, as `Catalog.validate` returns it). */
    readonly quote: (
      slug: string,
      input: ModelInput
    ) => Effect.Effect<Quote, Errors.ModelPriceUnavailable | Errors.InvalidModelInput>
    readonly checkExpected: typeof checkExpected
    readonly settle: typeof settle
    /**
     * The model's daily platform budget (`dailyBudgetMicros`) in the list in force, undefined when
     * it has none; read from this process's copy, like a quote.
     */
    readonly budgetOf: (slug: string) => Effect.Effect<Money.Micros | undefined>
    /** The price list in force (plain JSON data: it can be written back to a file as is). */
    readonly current: Effect.Effect<PriceList.PriceList>
    /** The body of GET /api/v1/prices for the list in force. */
    readonly prices: Effect.Effect<PriceList.PublicPrices>
    /** Replaces the whole list with raw JSON data, once it is valid. */
    readonly replace: (raw: unknown) => Effect.Effect<void, ChangeError>
    /** Sets (adds or overwrites) one model's entry, given as raw JSON data; the result must be valid. */
    readonly setModel: (slug: string, entry: unknown) => Effect.Effect<void, ChangeError>
    /**
     * Sets one model's entry to what `update` makes of its entry in the list the change builds on
     * (undefined when not listed), as raw JSON data: a change of part of an entry that cannot lose
     * a concurrent change of another part (as `setModel` after a read could).
     */
    readonly updateModel: (
      slug: string,
      update: (entry: PriceList.ModelPrice | undefined) => unknown
    ) => Effect.Effect<void, ChangeError>
    /** Stops a model from being quoted, keeping its prices; a model not listed gets `{ enabled: false }`. */
    readonly disable: (slug: string) => Effect.Effect<void, ChangeError>
  }
>()("@taskmeter/kernel/Pricer") {}

/**
 * A change to the list, as the raw list it makes of the one it builds on. `base` is read only by
 * changes that need it, so that a stored list this release cannot even decode can be replaced.
 */
type Change = (
  base: Effect.Effect<PriceList.PriceList, PriceList.PriceListInvalid>
) => Effect.Effect<unknown, PriceList.PriceListInvalid>

const service = (
  models: ReadonlyArray<PriceList.PricedModel>,
  current: Effect.Effect<PriceList.PriceList>,
  change: (next: Change) => Effect.Effect<void, ChangeError>
): Pricer["Service"] => {
  const updateModel = (slug: string, update: (entry: PriceList.ModelPrice | undefined) => unknown) =>
    change(Effect.map((list) => ({ models: { ...list.models, [slug]: update(list.models[slug]) } })))
  return Pricer.of({
    quote: (slug, input) => Effect.flatMap(current, (list) => quote(list, slug, input)),
    checkExpected,
    settle,
    budgetOf: (slug) => Effect.map(current, (list) => list.models[slug]?.dailyBudgetMicros),
    current,
    prices: Effect.map(current, (list) => PriceList.toPublic(list, models)),
    replace: (raw) => change(() => Effect.succeed(raw)),
    setModel: (slug, entry) => updateModel(slug, () => entry),
    updateModel,
    disable: (slug) => updateModel(slug, (entry) => ({ ...entry, enabled: false }))
  })
}

/** A Pricer over the given models, starting from raw price-list data, held in this process only. */
export const make = (
  models: ReadonlyArray<PriceList.PricedModel>,
  initial: unknown
): Effect.Effect<Pricer["Service"], PriceList.PriceListInvalid> =>
  Effect.gen(function* () {
    const ref = yield* SynchronizedRef.make(yield* PriceList.load(initial, models))
    return service(models, SynchronizedRef.get(ref), (next) =>
      SynchronizedRef.updateEffect(ref, (list) =>
        Effect.flatMap(next(Effect.succeed(list)), (raw) => PriceList.load(raw, models))
      )
    )
  })

export interface StoreOptions {
  /**
   * The list saved as version 1 when the store holds none (read only then): raw price-list
   * JSON data, checked like any other. E.g. `Effect.succeed(Pricer.defaultList)`.
   */
  readonly seed: Effect.Effect<unknown, PriceList.PriceListInvalid>
  /** How often the store's version is compared, besides the notifications. Default 5 s. */
  readonly pollIntervalMs?: number | undefined
}

const POLL_INTERVAL_MS = 5_000

/** A change meeting this many saves of other processes in a row gives up with PriceListConflict. */
const CHANGE_ATTEMPTS = 5

/** The problems of a stored list, saying which version they are in. */
const inVersion = (version: number) => (error: PriceList.PriceListInvalid) =>
  new PriceList.PriceListInvalid({ problems: error.problems.map((problem) => `version ${version} in the store: ${problem}`) })

/**
 * A stored version decoded, less the entries of models this release does not have: a deploy
 * that drops a model must not keep the server from starting on a list that prices it.
 */
const decodeStored = (
  models: ReadonlyArray<PriceList.PricedModel>,
  stored: { readonly version: number; readonly list: unknown }
) =>
  Effect.fromResult(PriceList.decode(stored.list)).pipe(
    Effect.map((list) => PriceList.withoutUnknownModels(list, models)),
    Effect.mapError(inVersion(stored.version))
  )

/** A stored version ready to quote from (see `decodeStored`); the entries left out are logged. */
const loadStored = (
  models: ReadonlyArray<PriceList.PricedModel>,
  stored: { readonly version: number; readonly list: unknown }
): Effect.Effect<PriceList.PriceList, PriceList.PriceListInvalid> =>
  Effect.gen(function* () {
    const { list, unknown } = yield* decodeStored(models, stored)
    if (unknown.length > 0) {
      yield* Effect.logWarning(
        `Price list version ${stored.version} prices models this release does not have, left out: ${unknown.join(", ")}`
      )
    }
    return yield* Effect.mapError(PriceList.load(list, models), inVersion(stored.version))
  })

/** The seed, checked, saved as version 1; or, if another process saved first, what it saved. */
const seeded = (
  models: ReadonlyArray<PriceList.PricedModel>,
  store: PriceStore["Service"],
  seed: StoreOptions["seed"]
): Effect.Effect<{ readonly version: number; readonly list: unknown }, PriceList.PriceListInvalid | StoreUnavailable> =>
  Effect.gen(function* () {
    const list = yield* PriceList.load(yield* seed, models)
    return yield* store.save(undefined, list).pipe(
      Effect.map(({ version }) => ({ version, list })),
      Effect.catchTag("PriceListConflict", () =>
        Effect.flatMap(store.current, (stored) =>
          stored === undefined
            ? Effect.die(new Error("PriceStore refused a first save yet holds no list"))
            : Effect.succeed(stored)
        )
      )
    )
  })

/**
 * A Pricer over a PriceStore: it quotes from this process's copy of the store's current version,
 * saves changes as compare-and-set versions (redone on a conflict, a few times), follows other
 * processes' saves by notification or every `pollIntervalMs`, and seeds an empty store as version 1.
 * What it does with versions or entries this release refuses: docs/decisions.md, Prices.
 */
export const makeStored = (
  models: ReadonlyArray<PriceList.PricedModel>,
  store: PriceStore["Service"],
  options: StoreOptions
): Effect.Effect<Pricer["Service"], PriceList.PriceListInvalid | StoreUnavailable, Scope.Scope> =>
  Effect.gen(function* () {
    // Before the first read, so that no save after it goes unheard.
    const saved = yield* store.subscribe
    const first = (yield* store.current) ?? (yield* seeded(models, store, options.seed))
    const list = yield* loadStored(models, first)
    const { adopt, current } = yield* FollowedList.follow({
      store,
      saved,
      first: { version: first.version, list },
      load: (stored) => loadStored(models, stored),
      pollInterval: Duration.millis(options.pollIntervalMs ?? POLL_INTERVAL_MS),
      unusable: (version, kept) =>
        `Price list version ${version} does not fit this release's catalog; quotes stay on version ${kept}`,
      unreachable: "Could not follow the stored price list"
    })

    const attempt = (next: Change) =>
      Effect.gen(function* () {
        const stored = yield* store.current
        const base =
          stored === undefined
            ? Effect.succeed<PriceList.PriceList>({ models: {} })
            : Effect.map(decodeStored(models, stored), ({ list }) => list)
        const list = yield* Effect.flatMap(next(base), (raw) => PriceList.load(raw, models))
        const { version } = yield* store.save(stored?.version, list)
        yield* adopt(version, list)
      })
    return service(models, current, (next) =>
      Effect.retry(attempt(next), {
        while: (error) => error._tag === "PriceListConflict",
        times: CHANGE_ATTEMPTS - 1
      })
    )
  })

/** The Pricer with the given raw price-list data, checked against the Catalog. */
export const layer = (priceList: unknown): Layer.Layer<Pricer, PriceList.PriceListInvalid, Catalog> =>
  Layer.effect(
    Pricer,
    Catalog.use((catalog) => make(catalog.models, priceList))
  )

/** Raw price-list data read from a JSON file; PriceListInvalid when it cannot be read or parsed. */
export const readList = (path: string): Effect.Effect<unknown, PriceList.PriceListInvalid> =>
  Effect.tryPromise({
    try: async () => JSON.parse(await readFile(path, "utf8")) as unknown,
    catch: (cause) => new PriceList.PriceListInvalid({ problems: [`${path}: cannot be read as JSON: ${String(cause)}`] })
  })

/** The Pricer with the price list read from a JSON file at start. */
export const layerFromFile = (path: string): Layer.Layer<Pricer, PriceList.PriceListInvalid, Catalog> =>
  Layer.unwrap(Effect.map(readList(path), layer))

/** The shipped defaults (prices/default-prices.json), as raw data. */
export const defaultList: unknown = defaultPrices

/** The Pricer with the shipped defaults (prices/default-prices.json). */
export const layerDefault: Layer.Layer<Pricer, PriceList.PriceListInvalid, Catalog> = layer(defaultList)

/**
 * The Pricer over the PriceStore (see `makeStored`): what processes sharing a store use, so
 * that a price change made through one is quoted by all.
 */
export const layerStore = (
  options: StoreOptions
): Layer.Layer<Pricer, PriceList.PriceListInvalid | StoreUnavailable, Catalog | PriceStore> =>
  Layer.effect(
    Pricer,
    Effect.flatMap(Effect.all([Catalog, PriceStore]), ([catalog, store]) => makeStored(catalog.models, store, options))
  )
