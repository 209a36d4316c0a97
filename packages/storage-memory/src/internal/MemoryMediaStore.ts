import { Effect } from "effect"
import { MediaStore, TaskStatus } from "@taskmeter/kernel"
import type { State } from "./State.ts"

/** A result is an orphan once its task is in a status no move leaves and none of its assets names it. */
const isOrphan = (state: State, record: MediaStore.ResultRecord): boolean => {
  const task = state.tasks.get(record.taskId)?.record
  return (
    task !== undefined &&
    TaskStatus.transitions[task.status].length === 0 &&
    !task.assets.some((asset) => asset.resultId === record.id)
  )
}

export const make = (state: State): MediaStore.MediaStore["Service"] =>
  MediaStore.MediaStore.of({
    putMedia: (record) => Effect.sync(() => void state.media.set(record.reference, record)),
    getMedia: (accountId, reference) =>
      Effect.sync(() => {
        const record = state.media.get(reference)
        return record?.accountId === accountId ? record : undefined
      }),
    missingMedia: (accountId, references) =>
      Effect.sync(() => references.filter((reference) => state.media.get(reference)?.accountId !== accountId)),
    putResult: (record) => Effect.sync(() => void state.results.set(record.id, record)),
    getResult: (accountId, id) =>
      Effect.sync(() => {
        const record = state.results.get(id)
        return record?.accountId === accountId ? record : undefined
      }),
    purgeOrphanResults: (createdBefore, limit) =>
      Effect.sync(() => {
        const purged: Array<MediaStore.PurgedResult> = []
        for (const record of state.results.values()) {
          if (purged.length >= limit) break
          if (record.createdAt.getTime() < createdBefore.getTime() && isOrphan(state, record)) {
            state.results.delete(record.id)
            purged.push({ id: record.id, blobKey: record.blobKey })
          }
        }
        return purged
      })
  })
