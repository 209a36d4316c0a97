/**
 * Upstream limits across workers: two workers, each with executors of its own (as two processes
 * have), over one store. The provider's and the model's limits hold for the pair, through the
 * store's slots; a worker holding a task past its lease frees its slots with the lease.
 */
import { Effect, Layer } from "effect"
import { describe, expect, it } from "@effect/vitest"
import * as Executors from "../../src/tasks/Executors.ts"
import * as TaskWorker from "../../src/tasks/TaskWorker.ts"
import { fakeProvider, admitTask, fast, MODEL, png, services, waitForStatus } from "./TaskWorkerSupport.ts"
import { fundedAccount, USD } from "../../src/testing/Fixtures.ts"

/** A provider whose submit takes 30 ms and records how many were in flight at most. */
const counted = (maxConcurrency?: number) => {
  const flight = { now: 0, most: 0 }
  const { adapter } = fakeProvider({
    ...(maxConcurrency === undefined ? {} : { maxConcurrency }),
    submit: [
      (call) =>
        Effect.gen(function* () {
          flight.now++
          flight.most = Math.max(flight.most, flight.now)
          yield* Effect.sleep(30)
          flight.now--
          return { _tag: "Completed" as const, upstreamId: `up-${call}`, outputs: [png(call)] }
        })
    ]
  })
  return { adapter, flight }
}

/** Runs two workers, each with its own Executors, until every task of `count` has succeeded. */
const twoWorkers = (options: Executors.Options, count: number) =>
  Effect.gen(function* () {
    const accountId = yield* fundedAccount(100 * USD)
    const tasks = yield* Effect.forEach(Array.from({ length: count }), () => admitTask({}, accountId))
    for (const id of ["w1", "w2"]) {
      yield* Effect.forkScoped(
        TaskWorker.run({ ...fast, workerId: id, slotWaitInitialMs: 5, slotWaitMaxMs: 20 }).pipe(
          Effect.provide(Layer.succeed(Executors.Executors, Executors.make(options)))
        )
      )
    }
    return yield* Effect.forEach(tasks, ({ task }) => waitForStatus(accountId, task.id, "succeeded", 10_000))
  })

describe("upstream limits across workers", () => {
  it.live("a provider's maxConcurrency holds for two workers together", () => {
    const { adapter, flight } = counted(2)
    return Effect.gen(function* () {
      const done = yield* twoWorkers({ adapters: [adapter] }, 8)
      expect(flight.most).toBe(2)
      expect(done.every((task) => task.provider === "fake")).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(services([adapter])))
  })

  it.live("a model's limit holds for two workers together", () => {
    const { adapter, flight } = counted()
    return Effect.gen(function* () {
      yield* twoWorkers({ adapters: [adapter], modelConcurrency: { [MODEL]: 1 } }, 5)
      expect(flight.most).toBe(1)
    }).pipe(Effect.scoped, Effect.provide(services([adapter])))
  })

  it.live("without limits, the workers run tasks side by side", () => {
    const { adapter, flight } = counted()
    return Effect.gen(function* () {
      yield* twoWorkers({ adapters: [adapter] }, 6)
      expect(flight.most).toBeGreaterThan(1)
    }).pipe(Effect.scoped, Effect.provide(services([adapter])))
  })
})
