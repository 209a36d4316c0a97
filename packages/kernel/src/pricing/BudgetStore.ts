/**
 * Storage port for the platform's daily budgets: per model and UTC day (`utcDay`, `YYYY-MM-DD`),
 * the total of the task prices admitted, shared by every process on one store. `take` adds an
 * amount atomically only if the new total stays within the limit passed in (so concurrent takes
 * never pass it); `giveBack` subtracts, never below 0; a take failing with StoreUnavailable may
 * have been applied. The policy: docs/decisions.md, Prices (daily platform budgets).
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

export class BudgetStore extends Context.Service<
  BudgetStore,
  {
    /** Adds the share to its day's total if the total stays at most `limitMicros`; whether it did. */
    readonly take: (share: Share & { readonly limitMicros: Micros }) => Effect.Effect<boolean, StoreUnavailable>
    /** Subtracts a share taken earlier; a total never goes below 0. */
    readonly giveBack: (share: Share) => Effect.Effect<void, StoreUnavailable>
    /** The model's total for the day (0 when nothing was taken). */
    readonly spent: (model: string, day: string) => Effect.Effect<Micros, StoreUnavailable>
  }
>()("@taskmeter/kernel/BudgetStore") {}

const DAY_MS = 86_400_000

/** The UTC date of an instant (epoch milliseconds), as `YYYY-MM-DD`. */
export const utcDay = (epochMillis: number): string => new Date(epochMillis).toISOString().slice(0, 10)

/** Whole seconds from an instant to the next 00:00 UTC, at least 1 (what Retry-After says). */
export const secondsToNextDay = (epochMillis: number): number =>
  Math.max(1, Math.ceil((DAY_MS - (((epochMillis % DAY_MS) + DAY_MS) % DAY_MS)) / 1000))
