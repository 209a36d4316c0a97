import { Effect } from "effect"
import { describe, expect } from "@effect/vitest"
import { TaskStore } from "../tasks/TaskStore.ts"
import type { Case } from "./Case.ts"
import { admission, admit, admitted, at, expectBalances, fundedAccount, newTask, USD } from "./Fixtures.ts"

const purge = (expiredBefore: Date, limit: number) => TaskStore.use((store) => store.purgeIdempotencyKeys(expiredBefore, limit))

export const idempotencyPurgeCases = (test: Case) =>
  describe("TaskStore.purgeIdempotencyKeys", () => {
    test(
      "deletes the keys expired at the cutoff, of every account, and no other",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const mine = yield* fundedAccount(5 * USD)
        const theirs = yield* fundedAccount(5 * USD, "theirs")
        const expiring = (accountId: typeof mine, expiresAt: Date) => {
          const request = admission(newTask(accountId), { idempotencyExpiresAt: expiresAt })
          return Effect.map(admitted(request), (task) => ({ request, task }))
        }
        const early = yield* expiring(mine, at(30))
        const onTheCutoff = yield* expiring(theirs, at(60))
        const justAfter = yield* expiring(mine, new Date(at(60).getTime() + 1))
        const late = yield* expiring(theirs, at(3600))

        expect(yield* purge(at(60), 100)).toBe(2)
        expect(yield* purge(at(60), 100)).toBe(0)
        // The tasks the purged keys named stay, and so does every reservation.
        expect(yield* store.get(mine, early.task.id)).toEqual(early.task)
        expect(yield* store.get(theirs, onTheCutoff.task.id)).toEqual(onTheCutoff.task)
        yield* expectBalances(mine, { balance: 5 * USD, reserved: 2 * USD })
        yield* expectBalances(theirs, { balance: 5 * USD, reserved: 2 * USD })

        // The keys still live at the cutoff still replay; the purged ones are gone.
        const retry = (admitted: typeof early, now: Date) =>
          admit({ ...admitted.request, task: newTask(admitted.task.accountId, { createdAt: now }) })
        expect(yield* retry(justAfter, at(60))).toEqual({ _tag: "Replayed", task: justAfter.task })
        expect(yield* retry(late, at(60))).toEqual({ _tag: "Replayed", task: late.task })
        expect(yield* store.findIdempotent(mine, early.request.idempotencyKey, at(0))).toBeUndefined()
        expect(yield* store.findIdempotent(theirs, onTheCutoff.request.idempotencyKey, at(0))).toBeUndefined()
        expect(yield* purge(at(3600), 100)).toBe(2)
      })
    )

    test(
      "deletes at most `limit` keys a call",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(10 * USD)
        const live = admission(newTask(accountId))
        const kept = yield* admitted(live)
        for (let i = 0; i < 5; i++) {
          yield* admitted(admission(newTask(accountId), { idempotencyExpiresAt: at(10 + i) }))
        }
        expect(yield* purge(at(60), 0)).toBe(0)
        expect(yield* purge(at(60), 2)).toBe(2)
        expect(yield* purge(at(60), 2)).toBe(2)
        expect(yield* purge(at(60), 2)).toBe(1)
        expect(yield* purge(at(60), 2)).toBe(0)
        expect(yield* admit({ ...live, task: newTask(accountId, { createdAt: at(61) }) })).toEqual({
          _tag: "Replayed",
          task: kept
        })
      })
    )

    test(
      "a purged key admits anew, and then protects the new task",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const request = admission(newTask(accountId), { idempotencyKey: "purged", idempotencyExpiresAt: at(60) })
        const first = yield* admitted(request)
        expect(yield* purge(at(60), 100)).toBe(1)

        const later = newTask(accountId, { createdAt: at(61) })
        const again = { ...request, task: later, fingerprint: "fp-another-request", idempotencyExpiresAt: at(3600) }
        const fresh = yield* admitted(again)
        expect(fresh.id).toBe(later.id)
        expect(yield* store.get(accountId, first.id)).toEqual(first)
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: 2 * USD })
        expect(yield* admit({ ...again, task: newTask(accountId, { createdAt: at(62) }) })).toEqual({
          _tag: "Replayed",
          task: fresh
        })
        expect(yield* store.findIdempotent(accountId, "purged", at(62))).toEqual({
          task: fresh,
          fingerprint: "fp-another-request"
        })
      })
    )

    test(
      "a key replays within its lifetime whatever was purged",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(5 * USD)
        const request = admission(newTask(accountId), { idempotencyKey: "live" })
        const original = yield* admitted(request)
        yield* admitted(admission(newTask(accountId), { idempotencyExpiresAt: at(30) }))
        expect(yield* purge(at(120), 100)).toBe(1)
        expect(yield* admit({ ...request, task: newTask(accountId, { createdAt: at(121) }) })).toEqual({
          _tag: "Replayed",
          task: original
        })
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: 2 * USD })
      })
    )

    test(
      "a reused key lives by its new expiry",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(5 * USD)
        const request = admission(newTask(accountId), { idempotencyKey: "reused", idempotencyExpiresAt: at(60) })
        yield* admitted(request)
        const reused = { ...request, task: newTask(accountId, { createdAt: at(61) }), idempotencyExpiresAt: at(600) }
        const renewed = yield* admitted(reused)
        expect(yield* purge(at(120), 100)).toBe(0)
        expect(yield* admit({ ...reused, task: newTask(accountId, { createdAt: at(121) }) })).toEqual({
          _tag: "Replayed",
          task: renewed
        })
        expect(yield* purge(at(600), 100)).toBe(1)
      })
    )
  })
