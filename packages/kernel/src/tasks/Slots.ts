/**
 * Bounded slots within one process: `hold(key)` takes one of the key's `perKey` slots (and one of
 * the `total`, when given) for the scope's lifetime, answering false without waiting when none is
 * free. TaskRunner bounds Prefer: wait with it.
 */
import { Effect } from "effect"
import type { Scope } from "effect"

export interface Slots {
  readonly hold: (key: string) => Effect.Effect<boolean, never, Scope.Scope>
}

export const make = (perKey: number, total = Number.POSITIVE_INFINITY): Slots => {
  const held = new Map<string, number>()
  let all = 0
  return {
    hold: (key) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          const count = held.get(key) ?? 0
          if (count >= perKey || all >= total) return false
          held.set(key, count + 1)
          all++
          return true
        }),
        (taken) =>
          Effect.sync(() => {
            if (!taken) return
            all--
            const left = (held.get(key) ?? 1) - 1
            if (left === 0) held.delete(key)
            else held.set(key, left)
          })
      )
  }
}
