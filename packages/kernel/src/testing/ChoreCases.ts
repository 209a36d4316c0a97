import { Effect } from "effect"
import { describe, expect } from "@effect/vitest"
import { TaskStore } from "../tasks/TaskStore.ts"
import type { Case } from "./Case.ts"
import { at } from "./Fixtures.ts"

const MINUTE = 60_000

/** Chore "sweep" every hour under a 10-minute lease, for `holder` at `seconds`. */
const take = (holder: string, seconds: number) =>
  TaskStore.use((store) =>
    store.takeChore({ name: "sweep", holder, now: at(seconds), leaseMs: 10 * MINUTE, everyMs: 60 * MINUTE })
  )

const free = (holder: string) => TaskStore.use((store) => store.freeChore({ name: "sweep", holder }))

export const choreCases = (test: Case) =>
  describe("TaskStore.takeChore", () => {
    test(
      "gives a chore to one holder at a time, and again only once it is due",
      Effect.gen(function* () {
        expect(yield* take("a", 0)).toBe(true)
        expect(yield* take("b", 1)).toBe(false)
        // Freed, it is still not due before an hour from its taking, for anyone.
        yield* free("a")
        expect([yield* take("b", 60), yield* take("a", 3599)]).toEqual([false, false])
        expect(yield* take("b", 3600)).toBe(true)
        expect(yield* take("a", 7199)).toBe(false)
        // Another chore is another row.
        expect(
          yield* TaskStore.use((store) =>
            store.takeChore({ name: "other", holder: "a", now: at(1), leaseMs: MINUTE, everyMs: MINUTE })
          )
        ).toBe(true)
      })
    )

    test(
      "keeps a chore from others while its pass outlasts its interval, until freed or the lease runs out",
      Effect.gen(function* () {
        // Every minute, under a 10-minute lease.
        const takeOften = (holder: string, seconds: number) =>
          TaskStore.use((store) =>
            store.takeChore({ name: "often", holder, now: at(seconds), leaseMs: 10 * MINUTE, everyMs: MINUTE })
          )
        const freeOften = (holder: string) => TaskStore.use((store) => store.freeChore({ name: "often", holder }))
        expect(yield* takeOften("a", 0)).toBe(true)
        expect(yield* takeOften("b", 120)).toBe(false)
        yield* freeOften("a")
        expect(yield* takeOften("b", 120)).toBe(true)
        // b dies holding it: a free by a former holder changes nothing, and c waits for the lease.
        yield* freeOften("a")
        expect(yield* takeOften("c", 719)).toBe(false)
        expect(yield* takeOften("c", 720)).toBe(true)
      })
    )

    test(
      "of several takers at once, exactly one takes the chore",
      Effect.gen(function* () {
        const taken = yield* Effect.all(
          Array.from({ length: 8 }, (_, index) => take(`holder-${index}`, 0)),
          { concurrency: "unbounded" }
        )
        expect(taken.filter(Boolean)).toHaveLength(1)
      })
    )
  })
