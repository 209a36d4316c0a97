import { Effect } from "effect"
import { describe, expect } from "@effect/vitest"
import { BudgetStore } from "../pricing/BudgetStore.ts"
import { micros } from "../domain/Money.ts"
import type { Case } from "./Case.ts"

const MODEL = "song-lyrics"
const DAY = "2030-01-01"

/** `take` of `amount` from MODEL's DAY (or the given model and day) under `limit`. */
const take = (amount: number, limit: number, model = MODEL, day = DAY) =>
  BudgetStore.use((store) => store.take({ model, day, amountMicros: micros(amount), limitMicros: micros(limit) }))

const giveBack = (amount: number, model = MODEL, day = DAY) =>
  BudgetStore.use((store) => store.giveBack({ model, day, amountMicros: micros(amount) }))

const spent = (model = MODEL, day = DAY) => BudgetStore.use((store) => store.spent(model, day))

export const budgetStoreCases = (test: Case) =>
  describe("BudgetStore", () => {
    test(
      "a day nothing was taken from has spent 0",
      Effect.gen(function* () {
        expect(yield* spent()).toBe(0)
      })
    )

    test(
      "takes within the limit add up; one past it is refused and adds nothing",
      Effect.gen(function* () {
        expect(yield* take(3_000, 10_000)).toBe(true)
        expect(yield* take(4_000, 10_000)).toBe(true)
        expect(yield* spent()).toBe(7_000)
        expect(yield* take(3_001, 10_000)).toBe(false)
        expect(yield* spent()).toBe(7_000)
        // A smaller take still fits after a refused one.
        expect(yield* take(2_000, 10_000)).toBe(true)
        expect(yield* spent()).toBe(9_000)
      })
    )

    test(
      "a take may reach the limit exactly; nothing more passes, but a take of 0 does",
      Effect.gen(function* () {
        expect(yield* take(6_000, 10_000)).toBe(true)
        expect(yield* take(4_000, 10_000)).toBe(true)
        expect(yield* spent()).toBe(10_000)
        expect(yield* take(1, 10_000)).toBe(false)
        expect(yield* take(0, 10_000)).toBe(true)
        expect(yield* spent()).toBe(10_000)
      })
    )

    test(
      "a first take over the limit on an empty day is refused and writes nothing",
      Effect.gen(function* () {
        expect(yield* take(10_001, 10_000)).toBe(false)
        expect(yield* spent()).toBe(0)
        expect(yield* take(10_000, 10_000)).toBe(true)
        expect(yield* spent()).toBe(10_000)
      })
    )

    test(
      "the limit is each take's own: a lowered one refuses while the total is above it",
      Effect.gen(function* () {
        expect(yield* take(5_000, 10_000)).toBe(true)
        expect(yield* take(1, 3_000)).toBe(false)
        expect(yield* spent()).toBe(5_000)
        expect(yield* take(5_000, 20_000)).toBe(true)
        expect(yield* spent()).toBe(10_000)
      })
    )

    test(
      "of many concurrent takes, exactly as many pass as the limit allows",
      Effect.gen(function* () {
        const taken = yield* Effect.all(
          Array.from({ length: 20 }, () => take(1, 7)),
          { concurrency: "unbounded" }
        )
        expect(taken.filter((passed) => passed)).toHaveLength(7)
        expect(yield* spent()).toBe(7)

        // Again with amounts that fit in several ways: the total is what the passing takes add up to.
        const amounts = Array.from({ length: 20 }, (_, i) => 1_000 + i * 100)
        const passed = yield* Effect.all(
          amounts.map((amount) => take(amount, 10_007, MODEL, "2030-01-02")),
          {
            concurrency: "unbounded"
          }
        )
        const total = amounts.reduce((sum, amount, i) => (passed[i] ? sum + amount : sum), 0)
        expect(total).toBeLessThanOrEqual(10_007)
        expect(passed.some((ok) => ok)).toBe(true)
        expect(yield* spent(MODEL, "2030-01-02")).toBe(total)
      })
    )

    test(
      "giveBack subtracts, never below 0, and frees room for later takes",
      Effect.gen(function* () {
        yield* take(8_000, 10_000)
        yield* giveBack(3_000)
        expect(yield* spent()).toBe(5_000)
        expect(yield* take(5_000, 10_000)).toBe(true)
        yield* giveBack(20_000)
        expect(yield* spent()).toBe(0)
        // A day nothing was taken from stays at 0.
        yield* giveBack(1_000, MODEL, "2030-02-01")
        expect(yield* spent(MODEL, "2030-02-01")).toBe(0)
        expect(yield* take(10_000, 10_000)).toBe(true)
      })
    )

    test(
      "each model and each day has its own total",
      Effect.gen(function* () {
        expect(yield* take(10_000, 10_000)).toBe(true)
        expect(yield* take(1, 10_000)).toBe(false)
        expect(yield* take(10_000, 10_000, "song-single-v5")).toBe(true)
        expect(yield* take(10_000, 10_000, MODEL, "2030-01-02")).toBe(true)
        expect(yield* take(9_000, 10_000, MODEL, "2029-12-31")).toBe(true)
        yield* giveBack(4_000, "song-single-v5")
        expect(yield* spent()).toBe(10_000)
        expect(yield* spent("song-single-v5")).toBe(6_000)
        expect(yield* spent(MODEL, "2030-01-02")).toBe(10_000)
        expect(yield* spent(MODEL, "2029-12-31")).toBe(9_000)
        expect(yield* spent("song-single-v5", "2030-01-02")).toBe(0)
      })
    )
  })
