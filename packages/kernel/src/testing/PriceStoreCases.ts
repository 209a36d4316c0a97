import { Effect, Fiber, Option, Result } from "effect"
import { describe, expect } from "@effect/vitest"
import { ChatPriceStore } from "../chat/ChatPriceStore.ts"
import { PriceListConflict, PriceStore } from "../pricing/PriceStore.ts"
import type { Case } from "./Case.ts"
import { defined } from "./Fixtures.ts"

/** A list with one flat price: `price` tells the versions apart. */
const flat = (price: number) => ({ models: { "song-lyrics": { enabled: true, priceMicros: price } } })

/** Nested JSON of every kind a price list holds, with the largest safe integer amount. */
const nested = {
  models: {
    "alpha-2-text-to-image-economy": {
      enabled: true,
      rateCard: [
        { when: { resolution: ["1k", "2k"], style: null }, priceMicros: 45_000 },
        {
          when: { resolution: "4k" },
          priceMicros: Number.MAX_SAFE_INTEGER,
          quantityField: "numImages",
          settlement: "perDeliveredUnit"
        }
      ]
    },
    "song-lyrics": { enabled: false },
    "Ünïcode ✓": { enabled: true, priceMicros: 0 }
  }
}

/** Whether `next` completes within `ms`. */
const wokenWithin = (next: Effect.Effect<void>, ms: number) => Effect.map(Effect.timeoutOption(next, ms), Option.isSome)

/** The cases of one price list's store: the task list's (PriceStore) or the chat list's (ChatPriceStore). */
const casesOf = (test: Case, name: string, port: typeof PriceStore | typeof ChatPriceStore) => {
  const Store = port as typeof PriceStore
  const save = (expectedVersion: number | undefined, list: unknown) => Store.use((store) => store.save(expectedVersion, list))

  /** The conflict a save must meet; anything else fails the case. */
  const conflictOf = (expectedVersion: number | undefined, list: unknown) =>
    Effect.flatMap(Effect.flip(save(expectedVersion, list)), (error) =>
      error instanceof PriceListConflict ? Effect.succeed(error) : Effect.die(error)
    )

  describe(name, () => {
    test(
      "an empty store has no list and no version",
      Effect.gen(function* () {
        const store = yield* Store
        expect(yield* store.current).toBeUndefined()
        expect(yield* store.version).toBeUndefined()
      })
    )

    test(
      "the first save is version 1, read back whole with the time it was saved",
      Effect.gen(function* () {
        const store = yield* Store
        const before = Date.now()
        expect(yield* save(undefined, nested)).toEqual({ version: 1 })
        const stored = defined(yield* store.current)
        expect(stored).toEqual({ version: 1, list: nested, changedAt: expect.any(Date) })
        // The store's clock, which may be another machine's: within a minute of this one.
        expect(Math.abs(stored.changedAt.getTime() - before)).toBeLessThan(60_000)
        expect(yield* store.version).toBe(1)
      })
    )

    test(
      "each save is the next version and becomes the current list",
      Effect.gen(function* () {
        const store = yield* Store
        for (let version = 1; version <= 4; version++) {
          expect(yield* save(version === 1 ? undefined : version - 1, flat(version * 1_000))).toEqual({ version })
          expect(yield* store.version).toBe(version)
          expect((yield* store.current)?.list).toEqual(flat(version * 1_000))
        }
      })
    )

    test(
      "a save not based on the current version is a conflict and writes nothing",
      Effect.gen(function* () {
        const store = yield* Store
        yield* save(undefined, flat(1_000))
        yield* save(1, flat(2_000))
        const current = yield* store.current

        expect((yield* conflictOf(undefined, flat(9))).expectedVersion).toBeUndefined()
        expect((yield* conflictOf(1, flat(9))).expectedVersion).toBe(1)
        expect((yield* conflictOf(3, flat(9))).expectedVersion).toBe(3)
        expect((yield* conflictOf(7, flat(9))).expectedVersion).toBe(7)
        expect(yield* store.current).toEqual(current)
        expect(yield* store.version).toBe(2)
        // The history has no gap: the next save is still version 3.
        expect(yield* save(2, flat(3_000))).toEqual({ version: 3 })
      })
    )

    test(
      "a save onto an empty store based on a version is a conflict",
      Effect.gen(function* () {
        yield* conflictOf(1, flat(9))
        expect(yield* Store.use((store) => store.current)).toBeUndefined()
      })
    )

    test(
      "of concurrent saves based on one version exactly one wins",
      Effect.gen(function* () {
        const store = yield* Store
        /** Ten saves at once of lists `base + i`, based on `expectedVersion`; the index of the one that won. */
        const race = (expectedVersion: number | undefined, base: number) =>
          Effect.gen(function* () {
            const results = yield* Effect.all(
              Array.from({ length: 10 }, (_, i) => Effect.result(save(expectedVersion, flat(base + i)))),
              { concurrency: "unbounded" }
            )
            const winners = results.flatMap((result, i) => (Result.isSuccess(result) ? [i] : []))
            expect(winners).toHaveLength(1)
            const losers = results.filter((result) => Result.isFailure(result) && result.failure instanceof PriceListConflict)
            expect(losers).toHaveLength(9)
            return { winner: winners[0]!, saved: results[winners[0]!] }
          })

        const first = yield* race(undefined, 100)
        expect(first.saved).toEqual(Result.succeed({ version: 1 }))
        expect(yield* store.current).toMatchObject({ version: 1, list: flat(100 + first.winner) })

        const second = yield* race(1, 200)
        expect(second.saved).toEqual(Result.succeed({ version: 2 }))
        expect(yield* store.current).toMatchObject({ version: 2, list: flat(200 + second.winner) })
      })
    )

    test(
      "a save wakes every subscriber; nothing else does",
      Effect.scoped(
        Effect.gen(function* () {
          const store = yield* Store
          const first = yield* store.subscribe
          const second = yield* store.subscribe
          expect(yield* wokenWithin(first, 200)).toBe(false)

          yield* save(undefined, flat(1_000))
          expect(yield* wokenWithin(first, 5_000)).toBe(true)
          expect(yield* wokenWithin(second, 5_000)).toBe(true)

          // Each subscriber is woken again by the next save, whoever read the last one.
          yield* save(1, flat(2_000))
          expect(yield* wokenWithin(second, 5_000)).toBe(true)
          expect(yield* wokenWithin(first, 5_000)).toBe(true)
        })
      )
    )

    test(
      "a subscriber that stopped waiting still hears the next save",
      Effect.scoped(
        Effect.gen(function* () {
          const store = yield* Store
          const next = yield* store.subscribe
          expect(yield* wokenWithin(next, 100)).toBe(false)
          const waiting = yield* Effect.forkChild(next)
          yield* save(undefined, flat(1_000))
          yield* Effect.timeout(Fiber.join(waiting), "5 seconds")
        })
      )
    )
  })
}

export const priceStoreCases = (test: Case) => {
  casesOf(test, "PriceStore", PriceStore)
  casesOf(test, "ChatPriceStore", ChatPriceStore)
  test(
    "the task and chat price lists are kept apart",
    Effect.gen(function* () {
      const tasks = yield* PriceStore
      const chat = yield* ChatPriceStore
      yield* tasks.save(undefined, flat(1_000))
      expect(yield* chat.version).toBeUndefined()
      expect(yield* chat.save(undefined, { models: {} })).toEqual({ version: 1 })
      expect(yield* tasks.save(1, flat(2_000))).toEqual({ version: 2 })
      expect(yield* chat.current).toMatchObject({ version: 1, list: { models: {} } })
    })
  )
}
