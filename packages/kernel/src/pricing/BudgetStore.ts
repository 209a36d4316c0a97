/**
 * Storage port for the platform's daily budgets: per model and UTC day, the total of the task
 * prices admitted, shared by every process on one store. The TaskRunner takes a task's price
 * from its model's day before admitting it, and gives it back when the admission did not admit
 * (see TaskRunner); the limit is the model's `dailyBudgetMicros` in the price list, passed in on
 * every take, so the store keeps totals only and a changed budget applies to the next take.
 *
 * A day is the UTC date as `YYYY-MM-DD` (`utcDay`); a (model, day) never taken from totals 0.
 * Past days are never read again; a store may keep them (for the operator) or drop them.
 *
 * Concurrency promises every store keeps, across processes sharing it:
 * - `take` is atomic: it adds `amountMicros` to the (model, day) total only if the new total is
 *   at most `limitMicros`, and answers whether it did. Concurrent takes are applied one after
 *   another, each seeing the others' totals, so the total never exceeds the limit any take
 *   passed: of 20 concurrent takes of 1 under a limit of 7, exactly 7 succeed.
 * - `giveBack` subtracts atomically and never leaves a total below 0.
 * - A take that fails with StoreUnavailable may or may not have been applied.
 *
 * @example
 * ```ts
 * const admitWithin = (model: string, priceMicros: Micros, budgetMicros: Micros) =>
 *   Effect.gen(function*() {
 *     const budgets = yield* BudgetStore
 *     const day = utcDay(yield* Clock.currentTimeMillis)
 *     if (!(yield* budgets.take({ model, day, amountMicros: priceMicros, limitMicros: budgetMicros }))) {
 *       return false // over the budget: refuse until the next UTC day
 *     }
 *     // ...admit; if it did not admit: budgets.giveBack({ model, day, amountMicros: priceMicros })
 *     return true
 *   })
 * ```
 */
import { Context } from "effect"
import type { Effect } from "effect"
import type { Micros } from "../domain/Money.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"

/** One model's share of one UTC day. */
export interface Share {
  readonly model: string
  /** The UTC date, `YYYY-MM-DD` (`utcDay`). */
  readonly day: string
  readonly amountMicros: Micros
}

export class BudgetStore extends Context.Service<BudgetStore, {
  /** Adds the share to its day's total if the total stays at most `limitMicros`; whether it did. */
  readonly take: (share: Share & { readonly limitMicros: Micros }) => Effect.Effect<boolean, StoreUnavailable>
  /** Subtracts a share taken earlier; a total never goes below 0. */
  readonly giveBack: (share: Share) => Effect.Effect<void, StoreUnavailable>
  /** The model's total for the day (0 when nothing was taken). */
  readonly spent: (model: string, day: string) => Effect.Effect<Micros, StoreUnavailable>
}>()("@taskmeter/kernel/BudgetStore") {}

const DAY_MS = 86_400_000

/** The UTC date of an instant (epoch milliseconds), as `YYYY-MM-DD`. */
export const utcDay = (epochMillis: number): string => new Date(epochMillis).toISOString().slice(0, 10)

/** Whole seconds from an instant to the next 00:00 UTC, at least 1 (what Retry-After says). */
export const secondsToNextDay = (epochMillis: number): number =>
  Math.max(1, Math.ceil((DAY_MS - (((epochMillis % DAY_MS) + DAY_MS) % DAY_MS)) / 1000))
