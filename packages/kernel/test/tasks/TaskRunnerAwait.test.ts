import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as TaskRunner from "../../src/tasks/TaskRunner.ts"
import { TaskStore } from "../../src/tasks/TaskStore.ts"
import { caller, layerWith, submission } from "./TaskRunnerSupport.ts"

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
})
