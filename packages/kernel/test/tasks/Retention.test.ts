/**
 * Retention in the kernel, on the memory store and the test clock: Outputs stamps each file asset
 * with the expiry its record was stored with (the default, ResultRetention's, or the account's
 * own); Housekeeping removes expired files in batches, each once; TaskView shows expiresAt
 * before and dataRemoved, without urls, after.
 */
import { Clock, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "@effect/vitest"
import { MemoryStore } from "@taskmeter/storage-memory"
import { AccountStore } from "../../src/accounts/AccountStore.ts"
import { BlobStore } from "../../src/media/BlobStore.ts"
import type { ResultId } from "../../src/domain/Ids.ts"
import { MediaStore } from "../../src/media/MediaStore.ts"
import * as Retention from "../../src/media/Retention.ts"
import * as Housekeeping from "../../src/tasks/Housekeeping.ts"
import * as Outputs from "../../src/tasks/Outputs.ts"
import * as TaskView from "../../src/tasks/TaskView.ts"
import type { TaskRecord } from "../../src/tasks/TaskStore.ts"
import { fundedAccount, newTask, USD } from "../../src/testing/Fixtures.ts"
import { png, storedFile } from "./TaskWorkerSupport.ts"

const MINUTE = 60_000
const DAY = 24 * 60 * MINUTE

const outputOptions: Outputs.Options = { maxBytes: 1024, timeoutMs: MINUTE }

/** Copies `count` outputs of a new task of the account in, as a worker does at the test clock's time; its assets. */
const storeOutputs = (accountId: ReturnType<typeof newTask>["accountId"], count: number) =>
  Outputs.store(
    newTask(accountId),
    Array.from({ length: count }, (_, i) => png(i + 1)),
    outputOptions
  )

/** The MemoryStore, with a BlobStore that records each batch it is asked to remove. */
const recordingRemovals = () => {
  const batches: Array<ReadonlyArray<string>> = []
  const layer = Layer.effect(
    BlobStore,
    Effect.gen(function* () {
      const blobs = yield* BlobStore
      return BlobStore.of({
        ...blobs,
        removeMany: (keys) =>
          Effect.andThen(
            Effect.sync(() => void batches.push(keys)),
            blobs.removeMany(keys)
          )
      })
    })
  ).pipe(Layer.provideMerge(MemoryStore.layer))
  return { batches, layer }
}

describe("Retention", () => {
  it.effect("Outputs stamps each file with the default expiry, the configured one, or the account's own", () =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const accountId = yield* fundedAccount(10 * USD)
      const [byDefault] = yield* storeOutputs(accountId, 1)
      expect(byDefault?.expiresAt).toBe(new Date(now + Retention.DEFAULT_DAYS * DAY).toISOString())
      const [configured] = yield* storeOutputs(accountId, 1).pipe(Effect.provide(Retention.layer(7)))
      expect(configured?.expiresAt).toBe(new Date(now + 7 * DAY).toISOString())
      yield* AccountStore.use((accounts) => accounts.setResultRetention(accountId, 2))
      const [own] = yield* storeOutputs(accountId, 1).pipe(Effect.provide(Retention.layer(7)))
      expect(own?.expiresAt).toBe(new Date(now + 2 * DAY).toISOString())
      const record = yield* MediaStore.use((media) => media.getResult(accountId, own!.resultId!))
      expect(record?.expiresAt.toISOString()).toBe(own?.expiresAt)
    }).pipe(Effect.provide(MemoryStore.layer))
  )

  it.effect("Housekeeping removes expired files every 10 minutes, in batches, each once, keeping the records", () => {
    const { batches, layer } = recordingRemovals()
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(10 * USD)
      const expiring = (yield* storeOutputs(accountId, 3).pipe(Effect.provide(Retention.layer(1)))).map(
        (asset) => asset.resultId!
      )
      const kept = (yield* storeOutputs(accountId, 1)).map((asset) => asset.resultId!)
      const files = (ids: ReadonlyArray<ResultId>) =>
        Effect.forEach(ids, (id) => Effect.map(storedFile(id), (file) => file !== undefined))
      yield* Effect.forkChild(Housekeeping.run({ batchSize: 2 }))
      yield* TestClock.adjust(DAY - Housekeeping.defaults.expiryIntervalMs)
      expect(yield* files([...expiring, ...kept])).toEqual([true, true, true, true])
      expect(batches).toEqual([])

      yield* TestClock.adjust(Housekeeping.defaults.expiryIntervalMs)
      expect(yield* files([...expiring, ...kept])).toEqual([false, false, false, true])
      expect(batches.map((batch) => batch.length)).toEqual([2, 1])
      expect(batches.flat().sort()).toEqual(expiring.map(Outputs.blobKeyOf).sort())
      // Nothing is read twice; the records stay for the tasks that name them.
      yield* TestClock.adjust(Housekeeping.defaults.expiryIntervalMs)
      expect(batches).toHaveLength(2)
      for (const id of expiring) {
        expect(yield* MediaStore.use((media) => media.getResult(accountId, id))).toBeDefined()
      }
    }).pipe(Effect.provide(layer))
  })

  it("TaskView shows the earliest expiry before it, and dataRemoved without urls from then on", () => {
    const record = {
      id: "task-1",
      model: "m",
      status: "succeeded",
      priceMicros: 1,
      createdAt: new Date(0),
      updatedAt: new Date(0),
      provider: "simulated",
      assets: [
        { id: "a", type: "image", resultId: "r-a", expiresAt: new Date(2 * DAY).toISOString() },
        { id: "b", type: "image", resultId: "r-b", expiresAt: new Date(DAY).toISOString() },
        { id: "t", type: "text", text: "lyrics" }
      ]
    } as unknown as TaskRecord
    const before = TaskView.task(record, new Date(DAY - 1))
    expect(before.expiresAt).toBe(new Date(DAY).toISOString())
    expect(before.dataRemoved).toBeUndefined()
    expect(before.assets.map((asset) => asset.url)).toEqual(["/api/v1/results/r-a", "/api/v1/results/r-b", undefined])
    const after = TaskView.task(record, new Date(DAY))
    expect(after.expiresAt).toBeUndefined()
    expect(after.dataRemoved).toBe(true)
    expect(after.assets.map((asset) => asset.url)).toEqual(["/api/v1/results/r-a", undefined, undefined])
    expect(after.assets[2]?.text).toBe("lyrics")
    const withoutFiles = TaskView.task({ ...record, assets: [] }, new Date(DAY))
    expect([withoutFiles.expiresAt, withoutFiles.dataRemoved]).toEqual([undefined, undefined])
  })
})
