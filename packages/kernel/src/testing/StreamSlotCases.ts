/** TaskStore.holdStream: an account's event streams, bounded across every process sharing the store. */
import { Deferred, Effect, Exit, Fiber, Scope } from "effect"
import { describe, expect } from "@effect/vitest"
import { TaskStore } from "../tasks/TaskStore.ts"
import type { Case } from "./Case.ts"
import { fundedAccount } from "./Fixtures.ts"

/** Takes a stream slot in a scope of its own: whether it was taken, and the scope that gives it back. */
const open = (accountId: Parameters<TaskStore["Service"]["holdStream"]>[0], limit: number) =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    const scope = yield* Scope.make()
    const held = yield* Scope.provide(store.holdStream(accountId, limit), scope)
    return { held, close: Scope.close(scope, Exit.void) }
  })

export const streamSlotCases = (test: Case) => {
  describe("TaskStore stream slots", () => {
    test(
      "at most `limit` streams of an account at once; a closed one makes room; accounts are independent",
      Effect.gen(function* () {
        const acme = yield* fundedAccount(0)
        const other = yield* fundedAccount(0, "other")
        const a = yield* open(acme, 2)
        const b = yield* open(acme, 2)
        const c = yield* open(acme, 2)
        expect([a.held, b.held, c.held]).toEqual([true, true, false])
        yield* c.close
        expect((yield* open(other, 2)).held).toBe(true)
        expect((yield* open(other, 1)).held).toBe(false)
        yield* a.close
        const d = yield* open(acme, 2)
        expect(d.held).toBe(true)
        expect((yield* open(acme, 2)).held).toBe(false)
        // A raised limit makes room at once; a lowered one counts the streams already open.
        expect((yield* open(acme, 3)).held).toBe(true)
        expect((yield* open(acme, 1)).held).toBe(false)
        yield* b.close
        yield* d.close
        expect((yield* open(acme, 0)).held).toBe(false)
      })
    )

    test(
      "concurrent opens: exactly `limit` of them hold a slot, and each comes back when its scope closes",
      Effect.gen(function* () {
        const acme = yield* fundedAccount(0)
        const ATTEMPTS = 12
        let answered = 0
        const allAnswered = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const attempt = Effect.scoped(
          Effect.gen(function* () {
            const held = yield* TaskStore.use((store) => store.holdStream(acme, 5))
            if (++answered === ATTEMPTS) yield* Deferred.succeed(allAnswered, undefined)
            yield* Deferred.await(release)
            return held
          })
        )
        const fiber = yield* Effect.forkChild(
          Effect.all(
            Array.from({ length: ATTEMPTS }, () => attempt),
            { concurrency: "unbounded" }
          )
        )
        yield* Deferred.await(allAnswered)
        const late = yield* open(acme, 5)
        expect(late.held).toBe(false)
        yield* Deferred.succeed(release, undefined)
        expect((yield* Fiber.join(fiber)).filter(Boolean)).toHaveLength(5)
        const again = yield* Effect.all(Array.from({ length: 5 }, () => open(acme, 5)))
        expect(again.map((slot) => slot.held)).toEqual([true, true, true, true, true])
      })
    )
  })
}
