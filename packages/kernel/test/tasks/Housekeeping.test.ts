import { Clock, Effect, Fiber, Layer, Logger } from "effect"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "@effect/vitest"
import { MemoryStore } from "@taskmeter/storage-memory"
import { BlobStore } from "../../src/media/BlobStore.ts"
import * as Housekeeping from "../../src/tasks/Housekeeping.ts"
import type { AccountId, ResultId } from "../../src/domain/Ids.ts"
import { MediaStore } from "../../src/media/MediaStore.ts"
import * as Outputs from "../../src/tasks/Outputs.ts"
import type { ProviderOutput } from "../../src/tasks/Provider.ts"
import { StoreUnavailable } from "../../src/domain/StoreError.ts"
import * as TaskWorker from "../../src/tasks/TaskWorker.ts"
import { TaskStore } from "../../src/tasks/TaskStore.ts"
import type { NewTask, StoredAsset } from "../../src/tasks/TaskStore.ts"
import { isUnfinished } from "../../src/domain/TaskStatus.ts"
import type { TaskStatus } from "../../src/domain/TaskStatus.ts"
import { admission, admitted, claimTask, fundedAccount, newTask, USD } from "../../src/testing/Fixtures.ts"
import { png, services, storedFile } from "./TaskWorkerSupport.ts"

const MINUTE = 60_000
const HOUR = 60 * MINUTE

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
    Effect.gen(function* () {
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
              Effect.sync(() => void purges.push({ ...base, deleted }))
            )
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
  Effect.gen(function* () {
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
    TaskStore.use((store) => store.findIdempotent(request.task.accountId, request.idempotencyKey, request.task.createdAt)),
    (found) => found !== undefined
  )

describe("Housekeeping", () => {
  it.effect("purges keys expired for the grace period at start and every interval, in chunks, and logs it", () => {
    const { purges, layer } = recordingStore(MemoryStore.layer)
    const logs = logged()
    return Effect.gen(function* () {
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
    return Effect.gen(function* () {
      yield* admitExpiring([1, 2])
      yield* TestClock.adjust(10 * MINUTE)
      expect(yield* Housekeeping.purgeIdempotencyKeys()).toBe(2)
      expect(purges.map((purge) => [purge.limit, purge.deleted])).toEqual([[1000, 2]])
    }).pipe(Effect.provide(layer))
  })

  it.effect("logs a failed pass and purges at the next one", () => {
    const { purges, layer } = recordingStore(MemoryStore.layer, 1)
    const logs = logged()
    return Effect.gen(function* () {
      const [request] = yield* admitExpiring([1])
      yield* TestClock.adjust(10 * MINUTE)
      const fiber = yield* Effect.forkChild(Housekeeping.run({ intervalMs: MINUTE }))
      yield* TestClock.adjust(0)
      expect(purges.map((purge) => purge.deleted)).toEqual(["failed"])
      expect(logs.lines.map((line) => [line.level, line.message[0]])).toEqual([
        ["Warn", "Purging expired Idempotency-Keys failed"]
      ])
      expect(yield* stored(request)).toBe(true)

      yield* TestClock.adjust(MINUTE)
      expect(purges.map((purge) => purge.deleted)).toEqual(["failed", 1])
      expect(yield* stored(request)).toBe(false)
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(Layer.merge(layer, logs.layer)))
  })

  it.effect(
    "is offered by every worker process, beside the task worker and the reconciler, and run by one of them a turn",
    () => {
      const { purges, layer } = recordingStore(services([]))
      return Effect.gen(function* () {
        const [request] = yield* admitExpiring([1])
        yield* TestClock.adjust(10 * MINUTE)
        yield* Effect.forkChild(TaskWorker.serve())
        yield* Effect.forkChild(TaskWorker.serve())
        yield* TestClock.adjust(0)
        expect(purges).toHaveLength(1)
        expect(yield* stored(request)).toBe(false)
        yield* TestClock.adjust(Housekeeping.defaults.intervalMs)
        expect(purges).toHaveLength(2)
        // A worker started meanwhile waits for the chore's next turn too.
        yield* TestClock.adjust(MINUTE)
        yield* Effect.forkChild(TaskWorker.serve())
        yield* TestClock.adjust(0)
        expect(purges).toHaveLength(2)
        yield* TestClock.adjust(Housekeeping.defaults.intervalMs - MINUTE)
        expect(purges).toHaveLength(3)
      }).pipe(Effect.provide(layer))
    }
  )
})

const outputOptions: Outputs.Options = { maxBytes: 1024, timeoutMs: MINUTE }

/** Copies an output in as a worker does, at the test clock's time; the result id of its file. */
const storeOutput = (task: NewTask, output: ProviderOutput) =>
  Effect.map(Outputs.store(task, [output], outputOptions), ([asset]) => asset!.resultId!)

/** Admits the task and moves it from queued along `path` under one lease, succeeding with `assets`. */
const settle = (task: NewTask, path: ReadonlyArray<TaskStatus>, assets: ReadonlyArray<StoredAsset> = []) =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    yield* admitted(admission(task))
    const { leaseToken } = yield* claimTask(task.id, task.createdAt)
    let from: TaskStatus = "queued"
    for (const to of path) {
      const moved = yield* store.transition({
        taskId: task.id,
        leaseToken,
        from,
        to,
        now: task.createdAt,
        keepLease: isUnfinished(to),
        ...(to === "succeeded" ? { chargeMicros: task.priceMicros, assets } : {})
      })
      expect(moved._tag).toBe("Done")
      from = to
    }
  })

/**
 * A succeeded task whose asset names one file, and two orphans: a second copy of its output,
 * as a worker that lost the task leaves one, and a file of a task that failed.
 */
const namedAndOrphans = Effect.gen(function* () {
  const accountId = yield* fundedAccount(10 * USD)
  const succeeded = newTask(accountId)
  const named = yield* storeOutput(succeeded, png(1))
  const copy = yield* storeOutput(succeeded, png(2))
  yield* settle(
    succeeded,
    ["submitting", "succeeded"],
    [{ id: "asset-1", type: "image", resultId: named, mimeType: "image/png" }]
  )
  const failed = newTask(accountId)
  yield* settle(failed, ["failed"])
  const lost = yield* storeOutput(failed, png(3))
  return { accountId, failed, named, orphans: [copy, lost] }
})

/** Whether the record and the file of each result are still there. */
const present = (accountId: AccountId, ids: ReadonlyArray<ResultId>) =>
  Effect.forEach(ids, (id) =>
    Effect.gen(function* () {
      const record = yield* MediaStore.use((media) => media.getResult(accountId, id))
      return { record: record !== undefined, file: (yield* storedFile(id)) !== undefined }
    })
  )

const both = { record: true, file: true }
const neither = { record: false, file: false }
const fileLeft = { record: false, file: true }

/** The stores of MemoryStore.layer, with a BlobStore whose first `failures` batch removals fail. */
const failingRemovals = (failures: number) =>
  Layer.effect(
    BlobStore,
    Effect.gen(function* () {
      const blobs = yield* BlobStore
      let failed = 0
      return BlobStore.of({
        ...blobs,
        removeMany: (keys) =>
          Effect.suspend(() =>
            failed++ < failures ? Effect.fail(new StoreUnavailable({ message: "disk unavailable" })) : blobs.removeMany(keys)
          )
      })
    })
  ).pipe(Layer.provideMerge(MemoryStore.layer))

describe("Housekeeping of orphaned result files", () => {
  it.effect("sweeps files past the grace period hourly, keeps the named ones, logs how many", () => {
    const logs = logged()
    return Effect.gen(function* () {
      const { accountId, failed, named, orphans } = yield* namedAndOrphans
      yield* TestClock.adjust(MINUTE)
      // A batch of one, to see the sweep go on until a batch comes back short.
      yield* Effect.forkChild(TaskWorker.serve({ housekeeping: { batchSize: 1 } }))
      yield* TestClock.adjust(0)
      expect(yield* present(accountId, [named, ...orphans])).toEqual([both, both, both])

      yield* TestClock.adjust(HOUR - MINUTE)
      expect(yield* present(accountId, [named, ...orphans])).toEqual([both, both, both])
      yield* TestClock.adjust(MINUTE)
      expect(yield* present(accountId, [named, ...orphans])).toEqual([both, neither, neither])
      expect(yield* storedFile(named)).toEqual([...png(1).bytes!])

      // An orphan made now is not yet past the grace at the next sweep, an hour on; at the one after, it is.
      const late = yield* storeOutput(failed, png(4))
      yield* TestClock.adjust(HOUR + 5 * MINUTE)
      expect(yield* present(accountId, [late])).toEqual([both])
      yield* TestClock.adjust(HOUR)
      expect(yield* present(accountId, [named, late])).toEqual([both, neither])
      expect(logs.lines.filter((line) => line.message[0] === "Removed orphaned result files")).toEqual([
        { level: "Info", message: ["Removed orphaned result files", { records: 2, removed: 2 }] },
        { level: "Info", message: ["Removed orphaned result files", { records: 1, removed: 1 }] }
      ])
    }).pipe(Effect.provide(Layer.merge(services([]), logs.layer)))
  })

  it.effect("logs and leaves a batch of files it cannot remove, and stops the sweep there", () => {
    const logs = logged()
    return Effect.gen(function* () {
      const { accountId, named, orphans } = yield* namedAndOrphans
      yield* TestClock.adjust(2 * HOUR)
      expect(yield* Housekeeping.sweepOrphanResults({ batchSize: 1 })).toEqual({ records: 1, removed: 0 })
      expect(logs.lines).toHaveLength(1)
      const [message, detail] = logs.lines[0]!.message as [string, { readonly files: number; readonly first: string }]
      expect([logs.lines[0]!.level, message]).toEqual(["Warn", "Could not remove orphaned result files; they are left"])
      expect(detail.files).toBe(1)
      const left = orphans.find((id) => Outputs.blobKeyOf(id) === detail.first)!
      const other = orphans.find((id) => id !== left)!
      expect(yield* present(accountId, [left, other])).toEqual([fileLeft, both])

      expect(yield* Housekeeping.sweepOrphanResults({ batchSize: 1 })).toEqual({ records: 1, removed: 1 })
      expect(yield* present(accountId, [named, left, other])).toEqual([both, fileLeft, neither])
    }).pipe(Effect.provide(Layer.merge(failingRemovals(1), logs.layer)))
  })
})
