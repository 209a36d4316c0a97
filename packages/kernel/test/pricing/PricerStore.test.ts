/**
 * The Pricer over a PriceStore (`Pricer.makeStored`, `layerStore`), several "processes" (Pricers)
 * sharing one storage-memory store: seeding, start-up refusals, changes saved and followed,
 * compare-and-set retries, lists this release refuses, and the version check that makes up for
 * a missed notification. Time is the TestClock's.
 */
import { Effect, Layer, Logger } from "effect"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "@effect/vitest"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as Catalog from "../../src/catalog/Catalog.ts"
import type * as PriceList from "../../src/pricing/PriceList.ts"
import * as Pricer from "../../src/pricing/Pricer.ts"
import { PriceStore } from "../../src/pricing/PriceStore.ts"

const SONG = "song-lyrics"
const VIDEO = "delta-omni-flash-text-to-video-economy"

const flat = (priceMicros: number) => ({ enabled: true, priceMicros })
const listOf = (models: Record<string, unknown>) => ({ models })
/** An entry no release accepts for SONG: its rate card tests a field the model does not have. */
const refused = { enabled: true, rateCard: [{ when: { mood: "sad" }, priceMicros: 1 }] }

const services = Layer.merge(Catalog.layer, MemoryStore.layer)

/** A Pricer ("process") over `store`. */
const start = (store: PriceStore["Service"], options: Partial<Pricer.StoreOptions> = {}) =>
  Effect.flatMap(Catalog.Catalog, (catalog) =>
    Pricer.makeStored(catalog.models, store, { seed: Effect.die("the seed should not be read"), ...options })
  )

const seed = (list: unknown) => ({ seed: Effect.succeed(list) })

/** What `pricer` quotes for a model, or the code it refuses with. */
const priceOf = (pricer: Pricer.Pricer["Service"], slug: string) =>
  pricer.quote(slug, { prompt: "rain" }).pipe(
    Effect.map((quote) => quote.priceMicros as number | string),
    Effect.catch((error) => Effect.succeed(error.code))
  )

/** Lets the other fibers (followers) run until `read` answers `expected`; fails after 100 turns. */
const eventually = <A>(read: Effect.Effect<A>, expected: A) =>
  Effect.gen(function* () {
    let last = yield* read
    for (let turn = 0; turn < 100 && last !== expected; turn++) {
      yield* Effect.yieldNow
      last = yield* read
    }
    expect(last).toBe(expected)
  })

/** The problems of a refused start or change; anything else fails the test. */
const problemsOf = <A, R>(effect: Effect.Effect<A, Pricer.ChangeError, R>) =>
  Effect.flatMap(Effect.flip(effect), (error) =>
    error._tag === "PriceListInvalid" ? Effect.succeed(error.problems) : Effect.die(error)
  )

const logged = () => {
  const lines: Array<{ readonly level: string; readonly message: ReadonlyArray<unknown> }> = []
  const layer = Logger.layer([
    Logger.make((options) => void lines.push({ level: options.logLevel, message: options.message as Array<unknown> }))
  ])
  return { lines, layer }
}

describe("Pricer over a PriceStore", () => {
  it.effect("an empty store gets the seed as version 1; a later process takes the stored list", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* PriceStore
        const first = yield* start(store, seed(listOf({ [SONG]: flat(5_000) })))
        expect(yield* store.current).toMatchObject({ version: 1, list: listOf({ [SONG]: flat(5_000) }) })
        expect(yield* priceOf(first, SONG)).toBe(5_000)
        expect(yield* priceOf(first, VIDEO)).toBe("MODEL_PRICE_UNAVAILABLE")

        const later = yield* start(store)
        expect(yield* priceOf(later, SONG)).toBe(5_000)
        expect(yield* store.version).toBe(1)
      })
    ).pipe(Effect.provide(services))
  )

  it.effect("processes starting together on an empty store all take the one seed saved", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* PriceStore
        const pricers = yield* Effect.all(
          [1, 2, 3, 4, 5].map((i) => start(store, seed(listOf({ [SONG]: flat(i * 1_000) })))),
          { concurrency: "unbounded" }
        )
        const saved = (yield* store.current)?.list as PriceList.PriceList
        expect(yield* store.version).toBe(1)
        for (const pricer of pricers) expect(yield* priceOf(pricer, SONG)).toBe(saved.models[SONG]?.priceMicros)
      })
    ).pipe(Effect.provide(services))
  )

  it.effect("an invalid seed fails the start and saves nothing", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* PriceStore
        expect(yield* problemsOf(start(store, seed(listOf({ "no-such-model": flat(1) }))))).toEqual([
          "models.no-such-model: no model has this slug"
        ])
        expect(yield* store.current).toBeUndefined()
      })
    ).pipe(Effect.provide(services))
  )

  it.effect("a current version this release refuses fails the start, naming the version", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* PriceStore
        yield* store.save(undefined, listOf({ [SONG]: flat(1_000) }))
        yield* store.save(1, listOf({ [SONG]: refused }))
        expect(yield* problemsOf(start(store))).toEqual([
          `version 2 in the store: models.${SONG}.rateCard[0].when.mood: model ${SONG} has no field "mood"`
        ])
      })
    ).pipe(Effect.provide(services))
  )

  it.effect("entries of models this release does not have are left out with a warning, and the rest is quoted", () => {
    const logs = logged()
    return Effect.scoped(
      Effect.gen(function* () {
        const store = yield* PriceStore
        yield* store.save(undefined, listOf({ [SONG]: flat(1_000), "a-model-of-another-release": flat(2_000) }))
        const pricer = yield* start(store)
        expect(yield* priceOf(pricer, SONG)).toBe(1_000)
        expect(logs.lines).toMatchObject([
          {
            level: "Warn",
            message: ["Price list version 1 prices models this release does not have, left out: a-model-of-another-release"]
          }
        ])

        yield* pricer.setModel(VIDEO, flat(3_000))
        expect((yield* store.current)?.list).toEqual(listOf({ [SONG]: flat(1_000), [VIDEO]: flat(3_000) }))
        expect(yield* problemsOf(pricer.setModel("a-model-of-another-release", flat(1)))).toEqual([
          "models.a-model-of-another-release: no model has this slug"
        ])
      })
    ).pipe(Effect.provide(Layer.merge(services, logs.layer)))
  })

  it.effect("a change through one process is in force there at once, saved, and followed by the others", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* PriceStore
        const one = yield* start(store, seed(listOf({ [SONG]: flat(5_000), [VIDEO]: flat(600_000) })))
        const other = yield* start(store)

        yield* one.setModel(SONG, flat(7_000))
        expect(yield* priceOf(one, SONG)).toBe(7_000)
        expect(yield* store.current).toMatchObject({ version: 2, list: listOf({ [SONG]: flat(7_000), [VIDEO]: flat(600_000) }) })
        yield* eventually(priceOf(other, SONG), 7_000)

        yield* other.disable(VIDEO)
        yield* eventually(priceOf(one, VIDEO), "MODEL_PRICE_UNAVAILABLE")
        expect((yield* one.current).models[VIDEO]).toEqual({ enabled: false, priceMicros: 600_000 })

        yield* one.replace(listOf({ [VIDEO]: flat(1) }))
        yield* eventually(priceOf(other, VIDEO), 1)
        expect(yield* priceOf(other, SONG)).toBe("MODEL_PRICE_UNAVAILABLE")
        expect(yield* store.version).toBe(4)
      })
    ).pipe(Effect.provide(services))
  )

  it.effect("a refused change saves nothing", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* PriceStore
        const pricer = yield* start(store, seed(listOf({ [SONG]: flat(5_000) })))
        expect(yield* problemsOf(pricer.setModel("no-such-model", flat(1)))).toEqual([
          "models.no-such-model: no model has this slug"
        ])
        expect(yield* store.version).toBe(1)
        expect(yield* priceOf(pricer, SONG)).toBe(5_000)
      })
    ).pipe(Effect.provide(services))
  )

  it.effect("a change that meets another process's save is redone on top of it: both survive", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* PriceStore
        const other = yield* start(store, seed(listOf({ [SONG]: flat(5_000) })))
        let raced = false
        // Another process saves between this one's read and its save, once.
        const racing = PriceStore.of({
          ...store,
          save: (expected, list) =>
            Effect.andThen(
              raced
                ? Effect.void
                : Effect.andThen(
                    Effect.sync(() => {
                      raced = true
                    }),
                    Effect.orDie(other.setModel(VIDEO, flat(600_000)))
                  ),
              store.save(expected, list)
            )
        })
        const one = yield* start(racing)

        yield* one.setModel(SONG, flat(7_000))
        expect(yield* store.current).toMatchObject({ version: 3, list: listOf({ [SONG]: flat(7_000), [VIDEO]: flat(600_000) }) })
        expect(yield* priceOf(one, VIDEO)).toBe(600_000)
        yield* eventually(priceOf(other, SONG), 7_000)
      })
    ).pipe(Effect.provide(services))
  )

  it.effect("a change that meets a save at every attempt gives up after 5 with PriceListConflict", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* PriceStore
        const other = yield* start(store, seed(listOf({ [SONG]: flat(5_000) })))
        let attempts = 0
        const busy = PriceStore.of({
          ...store,
          save: (expected, list) =>
            Effect.andThen(
              Effect.suspend(() => Effect.orDie(other.setModel(VIDEO, flat(++attempts)))),
              store.save(expected, list)
            )
        })
        const one = yield* start(busy)
        const error = yield* Effect.flip(one.setModel(SONG, flat(7_000)))
        expect(error._tag).toBe("PriceListConflict")
        expect(attempts).toBe(5)
        expect((yield* store.current)?.list).toEqual(listOf({ [SONG]: flat(5_000), [VIDEO]: flat(5) }))
        expect(yield* priceOf(one, SONG)).toBe(5_000)
      })
    ).pipe(Effect.provide(services))
  )

  it.effect("a stored version this release refuses is logged once and skipped; the next usable one is taken", () => {
    const logs = logged()
    return Effect.scoped(
      Effect.gen(function* () {
        const store = yield* PriceStore
        const pricer = yield* start(store, { ...seed(listOf({ [SONG]: flat(5_000) })), pollIntervalMs: 1_000 })

        yield* store.save(1, listOf({ [SONG]: refused, [VIDEO]: flat(1) }))
        yield* eventually(
          Effect.sync(() => logs.lines.length),
          1
        )
        expect(logs.lines[0]).toMatchObject({
          level: "Warn",
          message: [
            "Price list version 2 does not fit this release's catalog; quotes stay on version 1",
            expect.stringContaining(`models.${SONG}.rateCard[0].when.mood: model ${SONG} has no field "mood"`)
          ]
        })
        yield* TestClock.adjust(3_000)
        expect(logs.lines).toHaveLength(1)
        expect(yield* priceOf(pricer, SONG)).toBe(5_000)

        yield* store.save(2, listOf({ [SONG]: flat(8_000) }))
        yield* eventually(priceOf(pricer, SONG), 8_000)
        expect(logs.lines).toHaveLength(1)
      })
    ).pipe(Effect.provide(Layer.merge(services, logs.layer)))
  })

  it.effect("a missed notification is made up by the version check every pollIntervalMs", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* PriceStore
        const deaf = PriceStore.of({ ...store, subscribe: Effect.succeed(Effect.never) })
        const pricer = yield* start(deaf, { ...seed(listOf({ [SONG]: flat(5_000) })), pollIntervalMs: 5_000 })
        yield* store.save(1, listOf({ [SONG]: flat(9_000) }))
        yield* TestClock.adjust(4_999)
        expect(yield* priceOf(pricer, SONG)).toBe(5_000)
        yield* TestClock.adjust(1)
        yield* eventually(priceOf(pricer, SONG), 9_000)
      })
    ).pipe(Effect.provide(services))
  )

  it.effect("a stored list this release cannot decode cannot be edited, but can be replaced", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* PriceStore
        const pricer = yield* start(store, seed(listOf({ [SONG]: flat(5_000) })))
        yield* store.save(1, { models: "not a record" })
        const problems = yield* problemsOf(pricer.setModel(SONG, flat(7_000)))
        expect(problems.length).toBeGreaterThan(0)
        for (const problem of problems) expect(problem).toMatch(/^version 2 in the store: /)
        expect(yield* priceOf(pricer, SONG)).toBe(5_000)

        yield* pricer.replace(listOf({ [SONG]: flat(7_000) }))
        expect(yield* store.version).toBe(3)
        expect(yield* priceOf(pricer, SONG)).toBe(7_000)
      })
    ).pipe(Effect.provide(services))
  )

  it.effect("layerStore builds the service from the Catalog and the PriceStore in context", () =>
    Effect.gen(function* () {
      const pricer = yield* Pricer.Pricer
      expect(yield* priceOf(pricer, SONG)).toBe(5_000)
      expect(yield* PriceStore.use((store) => store.version)).toBe(1)
    }).pipe(Effect.provide(Pricer.layerStore(seed(listOf({ [SONG]: flat(5_000) }))).pipe(Layer.provideMerge(services))))
  )
})
