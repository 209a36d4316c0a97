import { Deferred, Effect } from "effect"
import { describe, expect, it } from "@effect/vitest"
import * as ErrorCode from "../../src/domain/TaskErrorCode.ts"
import type { PollResult, SubmitResult } from "../../src/tasks/Provider.ts"
import * as TaskWorker from "../../src/tasks/TaskWorker.ts"
import { TaskStore } from "../../src/tasks/TaskStore.ts"
import type { TaskRecord } from "../../src/tasks/TaskStore.ts"
import { entriesOfTask, expectBalances, expectBooksBalance, USD } from "../../src/testing/Fixtures.ts"
import type { FakeCalls } from "./TaskWorkerSupport.ts"
import { admitTask, fakeProvider, fast, png, services, waitFor, waitForStatus } from "./TaskWorkerSupport.ts"

const finished = (task: TaskRecord) => task.status === "succeeded" || task.status === "failed"

const kindsOf = (entries: ReadonlyArray<{ readonly kind: string; readonly amountMicros: number }>) =>
  entries.map((entry) => `${entry.kind} ${entry.amountMicros}`).sort()

const requestCancel = (task: TaskRecord) =>
  TaskStore.use((store) => store.cancel(task.accountId, task.id, new Date())).pipe(Effect.map((result) => result?._tag))

/** An upstream job that stays Pending until it is canceled, then answers `after`. */
const pendingUntilCanceled = (calls: () => FakeCalls, after: PollResult) => () =>
  Effect.sync((): PollResult => (calls().cancel.length > 0 ? after : { _tag: "Pending" }))

describe("TaskWorker cancel", () => {
  it.live("cancels a running task upstream at its next poll; the confirmed cancel fails it CANCELED, released", () => {
    const fake = fakeProvider({
      poll: [pendingUntilCanceled(() => fake.calls, { _tag: "Failed", errorCode: "UPSTREAM_CANCELED", message: "canceled" })],
      cancel: true
    })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* Effect.forkScoped(TaskWorker.run(fast))
      yield* waitForStatus(accountId, task.id, "running")
      expect(yield* requestCancel(task)).toBe("Requested")
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done).toMatchObject({ status: "failed", errorCode: ErrorCode.Canceled, chargedMicros: null })
      expect(fake.calls.cancel).toEqual([{ model: task.model, upstreamId: "up-1" }])
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: 0 })
      expect(kindsOf(yield* entriesOfTask(accountId, task.id))).toEqual([`release ${USD}`, `reserve ${USD}`])
      expect(yield* requestCancel(task)).toBe("Canceled")
      yield* expectBooksBalance
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("a job that finished before the cancel reached it settles as it finished, charged", () => {
    const fake = fakeProvider({
      poll: [pendingUntilCanceled(() => fake.calls, { _tag: "Succeeded", outputs: [png(2)] })],
      cancel: true
    })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* Effect.forkScoped(TaskWorker.run(fast))
      yield* waitForStatus(accountId, task.id, "running")
      expect(yield* requestCancel(task)).toBe("Requested")
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done).toMatchObject({ status: "succeeded", chargedMicros: USD })
      expect(fake.calls.cancel).toHaveLength(1)
      yield* expectBalances(accountId, { balance: 9 * USD, reserved: 0 })
      expect(yield* requestCancel(task)).toBe("NotCancelable")
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("an upstream without cancel runs the task to its end", () => {
    let polls = 0
    const fake = fakeProvider({
      poll: [() => Effect.sync((): PollResult => (++polls < 20 ? { _tag: "Pending" } : { _tag: "Succeeded", outputs: [png(1)] }))]
    })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* Effect.forkScoped(TaskWorker.run(fast))
      yield* waitForStatus(accountId, task.id, "running")
      expect(yield* requestCancel(task)).toBe("Requested")
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done.status).toBe("succeeded")
      expect(fake.calls.cancel).toEqual([])
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("a cancel that arrives while the task is being sent is passed upstream once it is accepted", () => {
    const canceled = Deferred.makeUnsafe<void>()
    const fake = fakeProvider({
      submit: [() => Effect.as(Deferred.await(canceled), { _tag: "Accepted", upstreamId: "up-9" } satisfies SubmitResult)],
      poll: [pendingUntilCanceled(() => fake.calls, { _tag: "Failed", errorCode: "UPSTREAM_CANCELED", message: "canceled" })],
      cancel: true
    })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* Effect.forkScoped(TaskWorker.run(fast))
      yield* waitForStatus(accountId, task.id, "submitting")
      expect(yield* requestCancel(task)).toBe("Requested")
      yield* Deferred.succeed(canceled, undefined)
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done).toMatchObject({ status: "failed", errorCode: ErrorCode.Canceled })
      expect(fake.calls.cancel).toEqual([{ model: task.model, upstreamId: "up-9" }])
      expect(fake.calls.poll).toHaveLength(1)
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: 0 })
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("a task left in submitting with a cancel request, never received upstream, fails CANCELED unsent", () => {
    const fake = fakeProvider({ lookup: [undefined] })
    return Effect.gen(function* () {
      const store = yield* TaskStore
      const { accountId, task } = yield* admitTask()
      // A worker that claimed it, moved it to submitting and died.
      const [claim] = yield* store.claim({ workerId: "dead", limit: 1, leaseMs: 1, now: new Date() })
      yield* store.transition({
        taskId: task.id,
        leaseToken: claim!.leaseToken,
        from: "queued",
        to: "submitting",
        now: new Date(),
        keepLease: true
      })
      expect(yield* requestCancel(task)).toBe("Requested")
      yield* Effect.sleep(5)
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done).toMatchObject({ status: "failed", errorCode: ErrorCode.Canceled })
      expect(fake.calls.lookup).toHaveLength(1)
      expect(fake.calls.submit).toEqual([])
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: 0 })
    }).pipe(Effect.provide(services([fake.adapter])))
  })
})
