import { Clock, Effect, PubSub } from "effect"
import { PriceStore } from "@taskmeter/kernel"
import type { State } from "./State.ts"

/** Copies in and out, so that no caller can rewrite a version once saved. */
const copy = <A>(value: A): A => structuredClone(value)

export const make = (state: State): Effect.Effect<PriceStore.PriceStore["Service"]> =>
  Effect.map(
    // One pending wake-up per subscriber is enough: every save since is read in one go.
    PubSub.sliding<void>(1),
    (saves) => {
      const latest = () => state.priceLists.at(-1)
      return PriceStore.PriceStore.of({
        current: Effect.sync(() => {
          const stored = latest()
          return stored === undefined ? undefined : { ...stored, list: copy(stored.list) }
        }),
        version: Effect.sync(() => latest()?.version),
        save: (expectedVersion, list) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.suspend(() => {
              if (latest()?.version !== expectedVersion) {
                return Effect.fail(new PriceStore.PriceListConflict({ expectedVersion }))
              }
              const version = (expectedVersion ?? 0) + 1
              state.priceLists.push({ version, list: copy(list), changedAt: new Date(now) })
              return Effect.as(PubSub.publish(saves, undefined), { version })
            })
          ),
        subscribe: Effect.map(PubSub.subscribe(saves), PubSub.take)
      })
    }
  )
