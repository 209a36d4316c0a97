import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { describe, expect } from "@effect/vitest"
import type { AccountId } from "../domain/Ids.ts"
import { MediaStore } from "../media/MediaStore.ts"
import type { ResultRecord } from "../media/MediaStore.ts"
import * as TaskStatus from "../domain/TaskStatus.ts"
import { TaskStore } from "../tasks/TaskStore.ts"
import type { NewTask, StoredAsset } from "../tasks/TaskStore.ts"
import type { Case } from "./Case.ts"
import { admission, admitted, at, defined, fundedAccount, newTask, price, resultRecord, USD } from "./Fixtures.ts"

/** Later than any record a case makes. */
const LONG_AFTER = at(10 * 365 * 24 * 3600)

const purge = (createdBefore: Date, limit: number) => MediaStore.use((store) => store.purgeOrphanResults(createdBefore, limit))

const purged = (...records: ReadonlyArray<ResultRecord>) => records.map((record) => ({ id: record.id, blobKey: record.blobKey }))

const fileOf = (record: ResultRecord): StoredAsset => ({
  id: `asset-${record.id}`,
  type: "video",
  resultId: record.id,
  mimeType: record.contentType
})

/** The moves that bring a queued task to each status. */
const pathTo: { readonly [To in TaskStatus.TaskStatus]: ReadonlyArray<TaskStatus.TaskStatus> } = {
  queued: [],
  submitting: ["submitting"],
  running: ["submitting", "running"],
  reconciliation_required: ["submitting", "reconciliation_required"],
  succeeded: ["submitting", "running", "succeeded"],
  failed: ["submitting", "running", "failed"]
}

/** A new task of the account under a model of its own, so that claiming it claims no other. */
const taskOf = (accountId: AccountId): NewTask => newTask(accountId, { model: `orphans-${randomUUID()}` })

/** Admits the task and walks it to `status` under one lease; succeeded with `assets`. */
const admitInStatus = (task: NewTask, status: TaskStatus.TaskStatus, assets: ReadonlyArray<StoredAsset> = []) =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    yield* admitted(admission(task))
    if (status === "queued") return
    const claims = yield* store.claim({ workerId: "orphans", limit: 1, leaseMs: 60_000, now: at(1), models: [task.model] })
    const claim = defined(claims[0])
    let from: TaskStatus.TaskStatus = "queued"
    for (const to of pathTo[status]) {
      const moved = yield* store.transition({
        taskId: task.id,
        leaseToken: claim.leaseToken,
        from,
        to,
        now: at(2),
        keepLease: TaskStatus.isUnfinished(to),
        ...(to === "running" ? { upstreamRef: "upstream-1" } : {}),
        ...(to === "succeeded" ? { chargeMicros: price(USD), assets } : {})
      })
      expect(moved._tag).toBe("Done")
      from = to
    }
  })

const putResults = (records: ReadonlyArray<ResultRecord>) =>
  MediaStore.use((store) => Effect.forEach(records, (record) => store.putResult(record), { discard: true }))

/** Whether each record is still stored, in order. */
const stillStored = (records: ReadonlyArray<ResultRecord>) =>
  MediaStore.use((store) =>
    Effect.forEach(records, (record) => Effect.map(store.getResult(record.accountId, record.id), (found) => found !== undefined))
  )

const sortedIds = (records: ReadonlyArray<{ readonly id: string }>) => records.map((record) => record.id).sort()

export const orphanResultCases = (test: Case) =>
  describe("MediaStore.purgeOrphanResults", () => {
    test(
      "never purges the results a finished task's assets name, however old",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(5 * USD)
        const task = taskOf(accountId)
        const named = [resultRecord(accountId, task.id), resultRecord(accountId, task.id)]
        const text: StoredAsset = { id: "asset-text", type: "text", text: "lyrics", mimeType: "text/plain" }
        yield* admitInStatus(task, "succeeded", [fileOf(named[0]!), text, fileOf(named[1]!)])
        yield* putResults(named)
        expect(yield* purge(LONG_AFTER, 100)).toEqual([])
        expect(yield* stillStored(named)).toEqual([true, true])
      })
    )

    test(
      "purges the results a finished task's assets do not name, of any account, once before the cutoff",
      Effect.gen(function* () {
        const mine = yield* fundedAccount(5 * USD)
        const theirs = yield* fundedAccount(5 * USD, "theirs")
        const succeeded = taskOf(mine)
        const named = resultRecord(mine, succeeded.id)
        const stray = resultRecord(mine, succeeded.id, at(100))
        yield* admitInStatus(succeeded, "succeeded", [fileOf(named)])
        const failed = taskOf(theirs)
        const lost = resultRecord(theirs, failed.id, at(200))
        yield* admitInStatus(failed, "failed")
        yield* putResults([named, stray, lost])

        // Created at the cutoff is not created before it.
        expect(yield* purge(at(100), 100)).toEqual([])
        expect(yield* purge(at(101), 100)).toEqual(purged(stray))
        expect(yield* purge(at(101), 100)).toEqual([])
        expect(yield* stillStored([named, stray, lost])).toEqual([true, false, true])
        expect(yield* purge(LONG_AFTER, 100)).toEqual(purged(lost))
        expect(yield* stillStored([named, stray, lost])).toEqual([true, false, false])
      })
    )

    test(
      "never purges the results of a task not yet succeeded or failed",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(10 * USD)
        const unfinished = ["queued", "submitting", "running", "reconciliation_required"] as const
        const records: Array<ResultRecord> = []
        const tasks: Array<NewTask> = []
        for (const status of unfinished) {
          const task = taskOf(accountId)
          yield* admitInStatus(task, status)
          tasks.push(task)
          records.push(resultRecord(accountId, task.id))
        }
        yield* putResults(records)
        expect(yield* purge(LONG_AFTER, 100)).toEqual([])
        expect(yield* stillStored(records)).toEqual([true, true, true, true])

        // The held task's status was all that kept its record: once failed, the record goes.
        const held = unfinished.indexOf("reconciliation_required")
        defined(yield* (yield* TaskStore).resolve({ taskId: tasks[held]!.id, to: "failed", now: at(3) }))
        expect(yield* purge(LONG_AFTER, 100)).toEqual(purged(records[held]!))
        expect(yield* stillStored(records)).toEqual([true, true, true, false])
      })
    )

    test(
      "deletes at most `limit` records a call",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(5 * USD)
        const task = taskOf(accountId)
        yield* admitInStatus(task, "failed")
        const records = Array.from({ length: 5 }, () => resultRecord(accountId, task.id))
        yield* putResults(records)
        expect(yield* purge(LONG_AFTER, 0)).toEqual([])
        const batches = [yield* purge(LONG_AFTER, 2), yield* purge(LONG_AFTER, 2), yield* purge(LONG_AFTER, 2)]
        expect(batches.map((batch) => batch.length)).toEqual([2, 2, 1])
        expect(sortedIds(batches.flat())).toEqual(sortedIds(records))
        expect(yield* purge(LONG_AFTER, 2)).toEqual([])
      })
    )

    test(
      "concurrent purges delete each orphan once, and nothing else",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(5 * USD)
        const failed = taskOf(accountId)
        yield* admitInStatus(failed, "failed")
        const succeeded = taskOf(accountId)
        const named = Array.from({ length: 3 }, () => resultRecord(accountId, succeeded.id))
        yield* admitInStatus(succeeded, "succeeded", named.map(fileOf))
        const orphans = [
          ...Array.from({ length: 20 }, () => resultRecord(accountId, failed.id)),
          ...Array.from({ length: 10 }, () => resultRecord(accountId, succeeded.id))
        ]
        yield* putResults([...orphans, ...named])

        const drain = Effect.gen(function* () {
          const mine: Array<{ readonly id: string }> = []
          // Bounded, so that a store answering without deleting fails the case instead of looping.
          for (let round = 0; round <= orphans.length; round++) {
            const batch = yield* purge(LONG_AFTER, 3)
            if (batch.length === 0) break
            mine.push(...batch)
          }
          return mine
        })
        const drained = yield* Effect.all([drain, drain, drain, drain], { concurrency: "unbounded" })
        expect(sortedIds(drained.flat())).toEqual(sortedIds(orphans))
        expect(yield* stillStored(named)).toEqual([true, true, true])
      })
    )
  })
