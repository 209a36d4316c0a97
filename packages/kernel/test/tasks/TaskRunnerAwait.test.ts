import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import type { TaskStatus } from "../../src/domain/TaskStatus.ts"
import * as TaskEvents from "../../src/tasks/TaskEvents.ts"
import * as TaskRunner from "../../src/tasks/TaskRunner.ts"
import { TaskStore } from "../../src/tasks/TaskStore.ts"
import type { TaskRecord } from "../../src/tasks/TaskStore.ts"
import { caller, layerWith, submission } from "./TaskRunnerSupport.ts"

/** A stream's event as the tests compare it: the status, or `progress <n>`. */
const nameOf = (change: TaskEvents.Change | TaskEvents.Progress): string =>
  change._tag === "Progress" ? `progress ${change.progress}` : TaskEvents.statusOf(change)

describe("TaskRunner.awaitTask", () => {
  it.effect("answers the task as it stands once the wait runs out, and no sooner", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(1_000_000)
      const { task } = yield* runner.submit(who, submission())
      const waiting = yield* Effect.forkChild(runner.awaitTask(task, 5_000))
      yield* TestClock.adjust(4_999)
      expect(waiting.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(1)
      const result = yield* Fiber.join(waiting)
      expect(result).toMatchObject({ waited: true, task: { id: task.id, status: "queued" } })
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("answers as soon as the task ends, woken by the store", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const store = yield* TaskStore
      const who = yield* caller(1_000_000)
      const { task } = yield* runner.submit(who, submission())
      const waiting = yield* Effect.forkChild(runner.awaitTask(task, 60_000))
      yield* TestClock.adjust(1_000)
      yield* store.cancel(who.accountId, task.id, new Date())
      const result = yield* Fiber.join(waiting)
      expect(result).toMatchObject({ waited: true, task: { status: "failed", errorCode: "CANCELED" } })
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("holds at most maxWaitsPerAccount waits of one account; another account still waits", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(1_000_000)
      const other = yield* caller(1_000_000)
      const { task } = yield* runner.submit(who, submission())
      const { task: theirs } = yield* runner.submit(other, submission())
      const held = yield* Effect.forkChild(
        Effect.all([runner.awaitTask(task, 5_000), runner.awaitTask(task, 5_000)], { concurrency: 2 })
      )
      yield* TestClock.adjust(1)
      expect(yield* runner.awaitTask(task, 5_000)).toEqual({ task, waited: false })
      const another = yield* Effect.forkChild(runner.awaitTask(theirs, 5_000))
      yield* TestClock.adjust(5_000)
      expect((yield* Fiber.join(held)).map((result) => result.waited)).toEqual([true, true])
      expect((yield* Fiber.join(another)).waited).toBe(true)
      // Released: the account waits again.
      const again = yield* Effect.forkChild(runner.awaitTask(task, 1_000))
      yield* TestClock.adjust(1_000)
      expect((yield* Fiber.join(again)).waited).toBe(true)
    }).pipe(Effect.provide(layerWith({ maxWaitsPerAccount: 2 })))
  )

  it.effect("holds at most maxWaits waits in the process, whatever the accounts; past it answers at once", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const tasks = []
      for (let i = 0; i < 3; i++) tasks.push((yield* runner.submit(yield* caller(1_000_000), submission())).task)
      const [first, second, third] = tasks as [TaskRecord, TaskRecord, TaskRecord]
      const held = yield* Effect.forkChild(
        Effect.all([runner.awaitTask(first, 5_000), runner.awaitTask(second, 5_000)], { concurrency: 2 })
      )
      yield* TestClock.adjust(1)
      expect(yield* runner.awaitTask(third, 5_000)).toEqual({ task: third, waited: false })
      yield* TestClock.adjust(5_000)
      expect((yield* Fiber.join(held)).map((result) => result.waited)).toEqual([true, true])
      const again = yield* Effect.forkChild(runner.awaitTask(third, 1_000))
      yield* TestClock.adjust(1_000)
      expect((yield* Fiber.join(again)).waited).toBe(true)
    }).pipe(Effect.provide(layerWith({ maxWaits: 2 })))
  )
})

describe("TaskRunner.follow", () => {
  const transitionTo = (task: TaskRecord, leaseToken: string, from: TaskStatus, to: TaskStatus) =>
    Effect.flatMap(TaskStore, (store) =>
      store.transition({ taskId: task.id, leaseToken, from, to, now: new Date(), keepLease: true })
    )

  it.effect("gives the task at each status change after `after`, ending with the terminal one", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const store = yield* TaskStore
      const who = yield* caller(1_000_000)
      const { task } = yield* runner.submit(who, submission())
      const seen: Array<string> = []
      const following = yield* Effect.forkChild(
        Effect.scoped(
          Effect.flatMap(runner.follow(task, 0), (events) =>
            Stream.runForEach(events, (t) => Effect.sync(() => seen.push(nameOf(t))))
          )
        )
      )
      yield* Effect.yieldNow
      const [claim] = yield* store.claim({ workerId: "w", limit: 1, leaseMs: 60_000, now: new Date() })
      const leaseToken = claim?.leaseToken ?? ""
      yield* transitionTo(task, leaseToken, "queued", "submitting")
      yield* Effect.yieldNow
      yield* transitionTo(task, leaseToken, "submitting", "running")
      yield* Effect.yieldNow
      yield* transitionTo(task, leaseToken, "running", "failed")
      yield* Fiber.join(following).pipe(Effect.timeout("5 seconds"), TestClock.withLive)
      expect(seen).toEqual(["queued", "submitting", "running", "failed"])
      expect(TaskEvents.sequenceOf("failed")).toBe(TaskEvents.LAST_SEQUENCE)
      // Resumed after running (3): only the final event, at once.
      const resumed = yield* Effect.scoped(Effect.flatMap(runner.follow(task, 3), Stream.runCollect))
      expect(resumed.map(nameOf)).toEqual(["failed"])
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("follow gives each progress change while running, unnumbered, and the current one on resume", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const store = yield* TaskStore
      const who = yield* caller(1_000_000)
      const { task } = yield* runner.submit(who, submission())
      const [claim] = yield* store.claim({ workerId: "w", limit: 1, leaseMs: 60_000, now: new Date() })
      const leaseToken = claim?.leaseToken ?? ""
      yield* transitionTo(task, leaseToken, "queued", "submitting")
      yield* transitionTo(task, leaseToken, "submitting", "running")
      const seen: Array<string> = []
      const following = yield* Effect.forkChild(
        Effect.scoped(
          Effect.flatMap(runner.follow(task, 2), (events) =>
            Stream.runForEach(events, (t) => Effect.sync(() => seen.push(nameOf(t))))
          )
        )
      )
      yield* Effect.yieldNow
      expect(yield* store.noteProgress(task.id, 40)).toBe(true)
      yield* Effect.yieldNow
      expect(yield* store.noteProgress(task.id, 40)).toBe(false)
      expect(yield* store.noteProgress(task.id, 70)).toBe(true)
      yield* Effect.yieldNow
      // A stream resumed within running gives the progress as it stands.
      const resumed = yield* Effect.scoped(
        Effect.flatMap(runner.follow(task, 3), (events) => Stream.runCollect(Stream.take(events, 1)))
      )
      expect(resumed.map(nameOf)).toEqual(["progress 70"])
      yield* transitionTo(task, leaseToken, "running", "failed")
      yield* Fiber.join(following).pipe(Effect.timeout("5 seconds"), TestClock.withLive)
      expect(seen).toEqual(["running", "progress 40", "progress 70", "failed"])
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("shares a read among the streams asking while it is under way; a later one reads again", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const { task } = yield* runner.submit(yield* caller(1_000_000), submission())
      let reads = 0
      const gate = yield* Deferred.make<void>()
      const read = TaskEvents.sharedReads(() =>
        Effect.sync(() => reads++).pipe(Effect.andThen(Deferred.await(gate)), Effect.as(task))
      )
      const waiting = yield* Effect.forkChild(Effect.all([read(task), read(task), read(task)], { concurrency: "unbounded" }))
      yield* Effect.yieldNow
      // The first asker leaving does not strand the others.
      const leaving = yield* Effect.forkChild(read(task))
      yield* Effect.yieldNow
      yield* Fiber.interrupt(leaving)
      yield* Deferred.succeed(gate, undefined)
      expect((yield* Fiber.join(waiting)).map((t) => t?.id)).toEqual([task.id, task.id, task.id])
      expect(reads).toBe(1)
      yield* read(task)
      expect(reads).toBe(2)
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("holds at most maxStreamsPerAccount streams of one account: CONCURRENCY_LIMITED past them", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(1_000_000)
      const other = yield* caller(1_000_000)
      const { task } = yield* runner.submit(who, submission())
      const { task: theirs } = yield* runner.submit(other, submission())
      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* runner.follow(task, 0)
          const refused = yield* Effect.flip(runner.follow(task, 0))
          if (refused._tag !== "ConcurrencyLimited") return expect.fail(`refused with ${refused._tag}`)
          expect([refused.code, refused.status]).toEqual(["CONCURRENCY_LIMITED", 429])
          expect(refused.message).toContain("1 event streams")
          yield* runner.follow(theirs, 0)
        })
      )
      // The scope gave the slot back.
      yield* Effect.scoped(runner.follow(task, 0))
    }).pipe(Effect.provide(layerWith({ maxStreamsPerAccount: 1 })))
  )
})
