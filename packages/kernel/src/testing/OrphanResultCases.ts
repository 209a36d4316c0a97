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

const pass = (createdBefore: Date, limit: number) => MediaStore.use((store) => store.purgeOrphanResults(createdBefore, limit))

/** The records one call deleted. */
const purge = (createdBefore: Date, limit: number) => Effect.map(pass(createdBefore, limit), ({ purged }) => purged)

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
      "judges at most `limit` records a call",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(5 * USD)
        const task = taskOf(accountId)
        yield* admitInStatus(task, "failed")
        const records = Array.from({ length: 5 }, () => resultRecord(accountId, task.id))
        yield* putResults(records)
        expect(yield* pass(LONG_AFTER, 0)).toEqual({ purged: [], judged: 0 })
        const batches = [yield* pass(LONG_AFTER, 2), yield* pass(LONG_AFTER, 2), yield* pass(LONG_AFTER, 2)]
        expect(batches.map((batch) => [batch.judged, batch.purged.length])).toEqual([
          [2, 2],
          [2, 2],
          [1, 1]
        ])
        expect(sortedIds(batches.flatMap((batch) => batch.purged))).toEqual(sortedIds(records))
        expect(yield* pass(LONG_AFTER, 2)).toEqual({ purged: [], judged: 0 })
      })
    )

    test(
      "reads only the records stored since the last call, and an unfinished task's again only once it finishes",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(10 * USD)
        const succeeded = taskOf(accountId)
        const kept = Array.from({ length: 30 }, () => resultRecord(accountId, succeeded.id, at(10)))
        yield* admitInStatus(succeeded, "succeeded", kept.map(fileOf))
        const held = taskOf(accountId)
        yield* admitInStatus(held, "reconciliation_required")
        const early = resultRecord(accountId, held.id, at(10))
        yield* putResults([...kept, early])
        expect(yield* pass(at(20), 100)).toEqual({ purged: [], judged: 31 })

        // What is kept is not read again: a call reads the new records only, however many are kept.
        expect(yield* pass(at(20), 100)).toEqual({ purged: [], judged: 0 })
        const failed = taskOf(accountId)
        yield* admitInStatus(failed, "failed")
        const fresh = [resultRecord(accountId, failed.id, at(30)), resultRecord(accountId, failed.id, at(31))]
        yield* putResults(fresh)
        const next = yield* pass(at(40), 100)
        expect([next.judged, sortedIds(next.purged)]).toEqual([2, sortedIds(fresh)])

        // A record stored with a createdAt behind the last one judged is not read.
        const late = resultRecord(accountId, failed.id, at(15))
        yield* putResults([late])
        expect(yield* pass(LONG_AFTER, 100)).toEqual({ purged: [], judged: 0 })
        expect(yield* stillStored([late])).toEqual([true])

        // The held task's record, left while the task was unfinished, is read again once it has failed.
        defined(yield* (yield* TaskStore).resolve({ taskId: held.id, to: "failed", now: at(50) }))
        expect(yield* pass(LONG_AFTER, 100)).toEqual({ purged: purged(early), judged: 1 })
        expect(yield* pass(LONG_AFTER, 100)).toEqual({ purged: [], judged: 0 })
        expect(yield* stillStored(kept)).toEqual(kept.map(() => true))
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

        // Each drains until a call judges fewer than its limit: one sweeping at the time, or none left.
        const drain = Effect.gen(function* () {
          const mine: Array<{ readonly id: string }> = []
          // Bounded, so that a store answering without judging fails the case instead of looping.
          for (let round = 0; round <= orphans.length + named.length; round++) {
            const batch = yield* pass(LONG_AFTER, 3)
            mine.push(...batch.purged)
            if (batch.judged < 3) break
          }
          return mine
        })
        const drained = yield* Effect.all([drain, drain, drain, drain], { concurrency: "unbounded" })
        expect(sortedIds(drained.flat())).toEqual(sortedIds(orphans))
        expect(yield* stillStored(named)).toEqual([true, true, true])
      })
    )
  })
