import { Clock, Effect, Fiber, Layer, Logger } from "effect"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "@effect/vitest"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as Housekeeping from "../src/Housekeeping.ts"
import { StoreUnavailable } from "../src/StoreError.ts"
import * as TaskWorker from "../src/TaskWorker.ts"
import { TaskStore } from "../src/TaskStore.ts"
import { admission, admitted, fundedAccount, newTask, USD } from "../src/testing/fixtures.ts"
import { services } from "./TaskWorkerSupport.ts"

const MINUTE = 60_000

interface Purge {
  readonly cutoff: number
  readonly limit: number
  readonly deleted: number | "failed"
}

/** The stores of `base`, recording each purge; the first `failures` purges fail as an outage would. */
const recordingStore = <A>(base: Layer.Layer<A | MemoryStore.Stores>, failures = 0) => {
  const purges: Array<Purge> = []
  const layer = Layer.effect(
    TaskStore,
    Effect.gen(function*() {
      const store = yield* TaskStore
      return TaskStore.of({
        ...store,
        purgeIdempotencyKeys: (expiredBefore, limit) =>
          Effect.suspend(() => {
            const base = { cutoff: expiredBefore.getTime(), limit }
            if (purges.filter((purge) => purge.deleted === "failed").length < failures) {
              purges.push({ ...base, deleted: "failed" })
              return Effect.fail(new StoreUnavailable({ message: "database unreachable" }))
            }
            return Effect.tap(store.purgeIdempotencyKeys(expiredBefore, limit), (deleted) =>
              Effect.sync(() => void purges.push({ ...base, deleted })))
          })
      })
    })
  ).pipe(Layer.provideMerge(base))
  return { purges, layer }
}

const logged = () => {
  const lines: Array<{ readonly level: string; readonly message: ReadonlyArray<unknown> }> = []
  const layer = Logger.layer([
    Logger.make((options) => void lines.push({ level: options.logLevel, message: options.message as Array<unknown> }))
  ])
  return { lines, layer }
}

/** Admits one task per expiry (minutes from now, on the test clock); the requests, to retry them. */
const admitExpiring = (minutes: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const accountId = yield* fundedAccount(100 * USD)
    return yield* Effect.forEach(minutes, (minute) => {
      const request = admission(newTask(accountId, { createdAt: new Date(now) }), {
        idempotencyExpiresAt: new Date(now + minute * MINUTE)
      })
      return Effect.as(admitted(request), request)
    })
  })

/** Whether the key of `request` is still stored: asked at its admission time, when it was live. */
const stored = (request: ReturnType<typeof admission>) =>
  Effect.map(
    TaskStore.use((store) =>
      store.findIdempotent(request.task.accountId, request.idempotencyKey, request.task.createdAt)
    ),
    (found) => found !== undefined
  )

describe("Housekeeping", () => {
  it.effect("purges keys expired for the grace period at start and every interval, in chunks, and logs it", () => {
    const { purges, layer } = recordingStore(MemoryStore.layer)
    const logs = logged()
    return Effect.gen(function*() {
      const start = yield* Clock.currentTimeMillis
      const expiring = yield* admitExpiring([1, 1, 2, 3, 4])
      const [live] = yield* admitExpiring([24 * 60])
      yield* Effect.forkChild(Housekeeping.run({ intervalMs: 5 * MINUTE, batchSize: 2, graceMs: 5 * MINUTE }))

      yield* TestClock.adjust(0)
      // At start nothing had expired 5 minutes before; at 5 minutes nothing yet either.
      expect(purges).toEqual([{ cutoff: start - 5 * MINUTE, limit: 2, deleted: 0 }])
      yield* TestClock.adjust(5 * MINUTE)
      expect(purges.slice(1)).toEqual([{ cutoff: start, limit: 2, deleted: 0 }])
      expect(logs.lines).toEqual([])

      // At 10 minutes every key expired by 5 goes, two a statement until a short one.
      yield* TestClock.adjust(5 * MINUTE)
      const cutoff = start + 5 * MINUTE
      expect(purges.slice(2)).toEqual([
        { cutoff, limit: 2, deleted: 2 },
        { cutoff, limit: 2, deleted: 2 },
        { cutoff, limit: 2, deleted: 1 }
      ])
      for (const request of expiring) expect(yield* stored(request)).toBe(false)
      expect(yield* stored(live)).toBe(true)
      expect(logs.lines).toEqual([{ level: "Info", message: ["Purged expired Idempotency-Keys", { deleted: 5 }] }])

      yield* TestClock.adjust(5 * MINUTE)
      expect(purges.slice(5)).toEqual([{ cutoff: start + 10 * MINUTE, limit: 2, deleted: 0 }])
      expect(yield* stored(live)).toBe(true)
    }).pipe(Effect.provide(Layer.merge(layer, logs.layer)))
  })

  it.effect("stops a pass at its first short statement, and defaults to 1000 a statement", () => {
    const { purges, layer } = recordingStore(MemoryStore.layer)
    return Effect.gen(function*() {
      yield* admitExpiring([1, 2])
      yield* TestClock.adjust(10 * MINUTE)
      expect(yield* Housekeeping.purgeIdempotencyKeys()).toBe(2)
      expect(purges.map((purge) => [purge.limit, purge.deleted])).toEqual([[1000, 2]])
    }).pipe(Effect.provide(layer))
  })

  it.effect("logs a failed pass and purges at the next one", () => {
    const { purges, layer } = recordingStore(MemoryStore.layer, 1)
    const logs = logged()
    return Effect.gen(function*() {
      const [request] = yield* admitExpiring([1])
      yield* TestClock.adjust(10 * MINUTE)
      const fiber = yield* Effect.forkChild(Housekeeping.run({ intervalMs: MINUTE }))
      yield* TestClock.adjust(0)
      expect(purges.map((purge) => purge.deleted)).toEqual(["failed"])
      expect(logs.lines.map((line) => [line.level, line.message[0]]))
        .toEqual([["Warn", "Purging expired Idempotency-Keys failed"]])
      expect(yield* stored(request)).toBe(true)

      yield* TestClock.adjust(MINUTE)
      expect(purges.map((purge) => purge.deleted)).toEqual(["failed", 1])
      expect(yield* stored(request)).toBe(false)
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(Layer.merge(layer, logs.layer)))
  })

  it.effect("runs in every worker process, beside the task worker and the reconciler", () => {
    const { purges, layer } = recordingStore(services([]))
    return Effect.gen(function*() {
      const [request] = yield* admitExpiring([1])
      yield* TestClock.adjust(10 * MINUTE)
      yield* Effect.forkChild(TaskWorker.serve())
      yield* TestClock.adjust(0)
      expect(purges).toHaveLength(1)
      expect(yield* stored(request)).toBe(false)
      yield* TestClock.adjust(Housekeeping.defaults.intervalMs)
      expect(purges).toHaveLength(2)
    }).pipe(Effect.provide(layer))
  })
})
