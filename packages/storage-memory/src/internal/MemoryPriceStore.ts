import { Clock, Effect, PubSub } from "effect"
import { PriceStore } from "@taskmeter/kernel"
import type { State } from "./State.ts"

/** Copies in and out, so that no caller can rewrite a version once saved. */
const copy = <A>(value: A): A => structuredClone(value)

/** The versions of one price list: the task list's (`priceLists`) or the chat list's (`chatPriceLists`). */
export const make = (
  state: State,
  list: "priceLists" | "chatPriceLists" = "priceLists"
): Effect.Effect<PriceStore.PriceStore["Service"]> =>
  Effect.map(
    // One pending wake-up per subscriber is enough: every save since is read in one go.
    PubSub.sliding<void>(1),
    (saves) => {
      const latest = () => state[list].at(-1)
      return PriceStore.PriceStore.of({
        current: Effect.sync(() => {
          const stored = latest()
          return stored === undefined ? undefined : { ...stored, list: copy(stored.list) }
        }),
        version: Effect.sync(() => latest()?.version),
        save: (expectedVersion, saved) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.suspend(() => {
              if (latest()?.version !== expectedVersion) {
                return Effect.fail(new PriceStore.PriceListConflict({ expectedVersion }))
              }
              const version = (expectedVersion ?? 0) + 1
              state[list].push({ version, list: copy(saved), changedAt: new Date(now) })
              return Effect.as(PubSub.publish(saves, undefined), { version })
            })
          ),
        subscribe: Effect.map(PubSub.subscribe(saves), PubSub.take)
      })
    }
  )
