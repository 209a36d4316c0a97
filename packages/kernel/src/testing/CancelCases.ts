import { Effect, Fiber } from "effect"
import { describe, expect } from "@effect/vitest"
import * as Ids from "../domain/Ids.ts"
import * as ErrorCode from "../domain/TaskErrorCode.ts"
import { TaskStore } from "../tasks/TaskStore.ts"
import type { CancelResult, TaskRecord, TransitionRequest } from "../tasks/TaskStore.ts"
import type { Case } from "./Case.ts"
import {
  admission,
  admitted,
  at,
  claimTask,
  defined,
  entriesOfTask,
  expectBalances,
  fundedAccount,
  newTask,
  USD
} from "./Fixtures.ts"

const ledgerOf = (accountId: TaskRecord["accountId"], taskId: string) =>
  Effect.map(entriesOfTask(accountId, taskId), (entries) => entries.map((entry) => [entry.kind, entry.amountMicros]).sort())

const cancel = (task: TaskRecord, seconds: number) => TaskStore.use((store) => store.cancel(task.accountId, task.id, at(seconds)))

const tagOf = (result: CancelResult | undefined) => defined(result)._tag

/** Claims a task and moves it to `to` under the lease, which it keeps. */
const leased = (task: TaskRecord, path: ReadonlyArray<TaskRecord["status"]>) =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    const claim = yield* claimTask(task.id, at(1))
    let from: TaskRecord["status"] = "queued"
    for (const to of path) {
      const step: TransitionRequest = { taskId: task.id, leaseToken: claim.leaseToken, from, to, now: at(2), keepLease: true }
      expect((yield* store.transition(to === "running" ? { ...step, upstreamRef: "up-1" } : step))._tag).toBe("Done")
      from = to
    }
    return claim.leaseToken
  })

export const cancelCases = (test: Case) => {
  describe("TaskStore cancel", () => {
    test(
      "a queued task fails CANCELED with its release at once, once, and only for its owner",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const mine = yield* fundedAccount(5 * USD)
        const theirs = yield* fundedAccount(5 * USD, "theirs")
        const task = yield* admitted(admission(newTask(mine)))
        expect(yield* store.cancel(theirs, task.id, at(3))).toBeUndefined()
        expect(yield* store.cancel(mine, Ids.makeTaskId(), at(3))).toBeUndefined()
        const results = yield* Effect.all([cancel(task, 3), cancel(task, 3), cancel(task, 3)], { concurrency: "unbounded" })
        expect(results.map(tagOf)).toEqual(["Canceled", "Canceled", "Canceled"])
        expect(defined(results[0]).task).toMatchObject({ status: "failed", errorCode: ErrorCode.Canceled, chargedMicros: null })
        yield* expectBalances(mine, { balance: 5 * USD, reserved: 0 })
        expect(yield* ledgerOf(mine, task.id)).toEqual([
          ["release", USD],
          ["reserve", USD]
        ])
        expect(tagOf(yield* cancel(task, 9))).toBe("Canceled")
        expect(yield* store.claim({ workerId: "w", limit: 10, leaseMs: 60_000, now: at(10) })).toEqual([])
      })
    )

    test(
      "a worker that leased the queued task loses its compare-and-set to the cancel",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const task = yield* admitted(admission(newTask(accountId)))
        const claim = yield* claimTask(task.id, at(1))
        expect(tagOf(yield* cancel(task, 2))).toBe("Canceled")
        const moved = yield* store.transition({
          taskId: task.id,
          leaseToken: claim.leaseToken,
          from: "queued",
          to: "submitting",
          now: at(3),
          keepLease: true
        })
        expect(moved._tag).toBe("LeaseLost")
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: 0 })
      })
    )

    test(
      "a running task records the first cancel request and keeps its reservation for its worker",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const task = yield* admitted(admission(newTask(accountId)))
        const leaseToken = yield* leased(task, ["submitting", "running"])
        const first = defined(yield* cancel(task, 5))
        expect(first._tag).toBe("Requested")
        expect(first.task).toMatchObject({ status: "running", cancelRequestedAt: at(5) })
        const again = defined(yield* cancel(task, 6))
        expect(again).toEqual(first)
        expect((yield* store.get(accountId, task.id))?.cancelRequestedAt).toEqual(at(5))
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: USD })
        const failed = yield* store.transition({
          taskId: task.id,
          leaseToken,
          from: "running",
          to: "failed",
          now: at(7),
          errorCode: ErrorCode.Canceled,
          keepLease: false
        })
        expect(failed._tag).toBe("Done")
        expect(tagOf(yield* cancel(task, 8))).toBe("Canceled")
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: 0 })
      })
    )

    test(
      "a task taken over after its worker died carries the cancel request in its claim",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const task = yield* admitted(admission(newTask(accountId)))
        yield* leased(task, ["submitting"])
        expect(tagOf(yield* cancel(task, 3))).toBe("Requested")
        const claims = yield* store.claim({ workerId: "w2", limit: 10, leaseMs: 60_000, now: at(120) })
        expect(claims.map((claim) => [claim.task.id, claim.task.status, claim.task.cancelRequestedAt])).toEqual([
          [task.id, "submitting", at(3)]
        ])
        const canceled = yield* store.transition({
          taskId: task.id,
          leaseToken: defined(claims[0]).leaseToken,
          from: "submitting",
          to: "failed",
          now: at(121),
          errorCode: ErrorCode.Canceled,
          keepLease: false
        })
        expect(canceled._tag).toBe("Done")
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: 0 })
      })
    )

    test(
      "a task that finished otherwise is not cancelable, and the cancel writes nothing",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const finished: Array<TaskRecord> = []
        for (const [to, extra] of [
          ["succeeded", { chargeMicros: USD, errorCode: null }],
          ["failed", { errorCode: "UPSTREAM_FAILED" }],
          ["reconciliation_required", { errorCode: ErrorCode.OutcomeUnknown }]
        ] as const) {
          const task = yield* admitted(admission(newTask(accountId)))
          const leaseToken = yield* leased(task, ["submitting", "running"])
          expect(tagOf(yield* cancel(task, 3))).toBe("Requested")
          const moved = yield* store.transition({
            taskId: task.id,
            leaseToken,
            from: "running",
            to,
            now: at(4),
            keepLease: false,
            ...extra
          } as TransitionRequest)
          expect(moved._tag).toBe("Done")
          finished.push(task)
        }
        const before = yield* expectBalances(accountId, { balance: 4 * USD, reserved: USD })
        for (const task of finished) {
          const result = defined(yield* cancel(task, 5))
          expect(result._tag).toBe("NotCancelable")
          expect(result.task.status).not.toBe("queued")
        }
        expect(yield* expectBalances(accountId, { balance: 4 * USD, reserved: USD })).toEqual(before)
      })
    )

    test(
      "watchStatus wakes a watcher when its task ends, by a cancel or a worker's write",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const queued = yield* admitted(admission(newTask(accountId)))
        const running = yield* admitted(admission(newTask(accountId)))
        const leaseToken = yield* leased(running, ["submitting", "running"])
        yield* Effect.scoped(
          Effect.gen(function* () {
            const first = yield* Effect.forkChild(yield* store.watchStatus(queued.id))
            const second = yield* Effect.forkChild(yield* store.watchStatus(running.id))
            yield* Effect.yieldNow
            expect(tagOf(yield* cancel(queued, 3))).toBe("Canceled")
            yield* Fiber.join(first).pipe(Effect.timeout("5 seconds"))
            const done = yield* store.transition({
              taskId: running.id,
              leaseToken,
              from: "running",
              to: "failed",
              now: at(4),
              errorCode: "UPSTREAM_FAILED",
              keepLease: false
            })
            expect(done._tag).toBe("Done")
            yield* Fiber.join(second).pipe(Effect.timeout("5 seconds"))
          })
        )
      })
    )

    test(
      "watchStatus wakes on every move, not only the last, and counts a move made while nobody awaited",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const task = yield* admitted(admission(newTask(accountId)))
        yield* Effect.scoped(
          Effect.gen(function* () {
            const changed = yield* store.watchStatus(task.id)
            const woken = yield* Effect.forkChild(changed)
            yield* Effect.yieldNow
            const leaseToken = yield* leased(task, ["submitting"])
            // Each wake answers the status the move reached, so that an event needs no read.
            expect(yield* Fiber.join(woken).pipe(Effect.timeout("5 seconds"))).toBe("submitting")
            // The move to running lands before anyone awaits again: the next await answers at once.
            const step = { taskId: task.id, leaseToken, now: at(3), keepLease: true, upstreamRef: "up-1" } as const
            expect((yield* store.transition({ ...step, from: "submitting", to: "running" }))._tag).toBe("Done")
            yield* Effect.sleep("50 millis")
            expect(yield* changed.pipe(Effect.timeout("5 seconds"))).toBe("running")
            // Two moves meanwhile answer once, with the furthest status.
            expect((yield* store.transition({ ...step, from: "running", to: "reconciliation_required" }))._tag).toBe("Done")
            const resolved = yield* store.resolve({ taskId: task.id, to: "failed", now: at(4), errorCode: "UPSTREAM_FAILED" })
            expect(resolved?.status).toBe("failed")
            expect(yield* changed.pipe(Effect.timeout("5 seconds"))).toBe("failed")
          })
        )
      })
    )

    test(
      "noteProgress records a running task's progress when it changes, wakes its watchers without a status, and nothing else",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const task = yield* admitted(admission(newTask(accountId)))
        expect(yield* store.noteProgress(task.id, 10)).toBe(false)
        const leaseToken = yield* leased(task, ["submitting"])
        expect(yield* store.noteProgress(task.id, 10)).toBe(false)
        const step = { taskId: task.id, leaseToken, now: at(3), keepLease: true, upstreamRef: "up-1" } as const
        expect((yield* store.transition({ ...step, from: "submitting", to: "running" }))._tag).toBe("Done")
        const before = yield* store.get(accountId, task.id)
        expect(before?.progress).toBeUndefined()
        yield* Effect.scoped(
          Effect.gen(function* () {
            const changed = yield* store.watchStatus(task.id)
            // Until a wake without a status (the watcher reads the task); the earlier moves may still be heard.
            const woken = yield* Effect.forkChild(Effect.repeat(changed, { until: (status) => status === undefined }))
            yield* Effect.yieldNow
            expect(yield* store.noteProgress(task.id, 40)).toBe(true)
            expect(yield* Fiber.join(woken).pipe(Effect.timeout("5 seconds"))).toBeUndefined()
          })
        )
        expect(yield* store.noteProgress(task.id, 40)).toBe(false)
        const noted = yield* store.get(accountId, task.id)
        expect(noted).toMatchObject({ status: "running", progress: 40, updatedAt: before?.updatedAt })
        // The lease is untouched: its holder carries on.
        expect(yield* store.renew(task.id, leaseToken, at(60))).toBe(true)
        expect((yield* store.transition({ ...step, from: "running", to: "failed", errorCode: "UPSTREAM_FAILED" }))._tag).toBe(
          "Done"
        )
        expect(yield* store.noteProgress(task.id, 80)).toBe(false)
        expect((yield* store.get(accountId, task.id))?.progress).toBe(40)
      })
    )
  })
}
