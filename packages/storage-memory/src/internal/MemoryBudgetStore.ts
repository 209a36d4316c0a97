import { Effect } from "effect"
import { BudgetStore, Money } from "@taskmeter/kernel"
import type { State } from "./State.ts"

const keyOf = (model: string, day: string): string => `${day} ${model}`

export const make = (state: State): BudgetStore.BudgetStore["Service"] => {
  const spentOn = (model: string, day: string): number => state.budgetDays.get(keyOf(model, day)) ?? 0
  return BudgetStore.BudgetStore.of({
    // Check and add in one step: nothing else runs in between.
    take: ({ amountMicros, day, limitMicros, model }) =>
      Effect.sync(() => {
        const total = spentOn(model, day) + amountMicros
        if (total > limitMicros) return false
        state.budgetDays.set(keyOf(model, day), total)
        return true
      }),
    giveBack: ({ amountMicros, day, model }) =>
      Effect.sync(() => {
        state.budgetDays.set(keyOf(model, day), Math.max(0, spentOn(model, day) - amountMicros))
      }),
    spent: (model, day) => Effect.sync(() => Money.micros(spentOn(model, day)))
  })
}
