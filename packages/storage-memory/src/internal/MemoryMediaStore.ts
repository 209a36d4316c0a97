import { Effect } from "effect"
import { MediaStore, Retention, TaskStatus } from "@taskmeter/kernel"
import type { State } from "./State.ts"

/** Whether the record's task is in a status no move leaves (so its assets never change again). */
const isFinal = (state: State, record: MediaStore.ResultRecord): boolean => {
  const task = state.tasks.get(record.taskId)?.record
  return task !== undefined && TaskStatus.transitions[task.status].length === 0
}

/** A result is an orphan once its task is final and none of its assets names it. */
const isOrphan = (state: State, record: MediaStore.ResultRecord): boolean =>
  isFinal(state, record) && !state.tasks.get(record.taskId)!.record.assets.some((asset) => asset.resultId === record.id)

/** The expiry a file is stored with: by the account's own retention when set, else the one given. */
const expiryOf = (
  state: State,
  record: { readonly accountId: string; readonly createdAt: Date; readonly expiresAt: Date }
): Date => {
  const days = state.resultRetentionDays.get(record.accountId)
  return days === undefined ? record.expiresAt : Retention.expiresAt(record.createdAt, days)
}

/** (createdAt, id) order, the sweep's. */
const after = (record: MediaStore.ResultRecord, mark: { readonly createdAt: number; readonly id: string }): boolean =>
  record.createdAt.getTime() > mark.createdAt || (record.createdAt.getTime() === mark.createdAt && record.id > mark.id)

const byCreated = (a: MediaStore.ResultRecord, b: MediaStore.ResultRecord): number =>
  a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

export const make = (state: State): MediaStore.MediaStore["Service"] =>
  MediaStore.MediaStore.of({
    putMedia: (record) =>
      Effect.sync(() => {
        const expiresAt = expiryOf(state, record)
        state.media.set(record.reference, { ...record, expiresAt })
        return expiresAt
      }),
    getMedia: (accountId, reference) =>
      Effect.sync(() => {
        const record = state.media.get(reference)
        return record?.accountId === accountId ? record : undefined
      }),
    missingMedia: (accountId, references, now) =>
      Effect.sync(() => ({
        missing: references.filter((reference) => state.media.get(reference)?.accountId !== accountId),
        expired: references.filter((reference) => {
          const record = state.media.get(reference)
          return record?.accountId === accountId && record.expiresAt.getTime() <= now.getTime()
        })
      })),
    putResult: (record) =>
      Effect.sync(() => {
        const expiresAt = expiryOf(state, record)
        state.results.set(record.id, { ...record, expiresAt })
        return expiresAt
      }),
    getResult: (accountId, id) =>
      Effect.sync(() => {
        const record = state.results.get(id)
        return record?.accountId === accountId ? record : undefined
      }),
    purgeOrphanResults: (createdBefore, limit) =>
      Effect.sync(() => {
        const sweep = state.orphanSweep
        const purged: Array<MediaStore.PurgedResult> = []
        const judge = (record: MediaStore.ResultRecord) => {
          if (isOrphan(state, record)) {
            state.results.delete(record.id)
            purged.push({ id: record.id, blobKey: record.blobKey })
          }
        }
        const finished: Array<MediaStore.ResultRecord> = []
        for (const id of sweep.pending) {
          const record = state.results.get(id)
          if (record === undefined) sweep.pending.delete(id)
          else if (finished.length < limit && isFinal(state, record)) finished.push(record)
        }
        for (const record of finished) {
          sweep.pending.delete(record.id)
          judge(record)
        }
        const mark = sweep.mark
        const window = [...state.results.values()]
          .filter((record) => record.createdAt.getTime() < createdBefore.getTime() && (mark === undefined || after(record, mark)))
          .sort(byCreated)
          .slice(0, Math.max(0, limit - finished.length))
        for (const record of window) {
          if (isFinal(state, record)) judge(record)
          else sweep.pending.add(record.id)
        }
        const last = window.at(-1)
        if (last !== undefined) sweep.mark = { createdAt: last.createdAt.getTime(), id: last.id }
        return { purged, judged: finished.length + window.length }
      }),
    expireResults: (now, limit) =>
      Effect.sync(() => {
        const due = [...state.results.values()]
          .filter((record) => record.expiresAt.getTime() <= now.getTime() && !state.expiredResults.has(record.id))
          .sort((a, b) => a.expiresAt.getTime() - b.expiresAt.getTime() || (a.id < b.id ? -1 : 1))
          .slice(0, Math.max(0, limit))
        for (const record of due) state.expiredResults.add(record.id)
        return due.map(({ blobKey, id }) => ({ id, blobKey }))
      }),
    expireMedia: (now, limit) =>
      Effect.sync(() => {
        const due = [...state.media.values()]
          .filter((record) => record.expiresAt.getTime() <= now.getTime() && !state.expiredMedia.has(record.reference))
          .sort((a, b) => a.expiresAt.getTime() - b.expiresAt.getTime() || (a.reference < b.reference ? -1 : 1))
          .slice(0, Math.max(0, limit))
        for (const record of due) state.expiredMedia.add(record.reference)
        return due.map(({ blobKey, reference }) => ({ reference, blobKey }))
      })
  })
