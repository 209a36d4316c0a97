/**
 * How a stored task is shown to its owner at `now`: the spec's Task shape, with file results linked at
 * `/api/v1/results/<uuid>` and text results inline, the provider that ran it, and while it runs its
 * progress when the upstream reported one. Nothing else of the record (input, account,
 * upstream reference, lease) leaves the server. Retention: a task with files shows the earliest
 * file's `expiresAt` until then, and `dataRemoved: true` from then on, when its file assets lose their url.
 */
import type * as Task from "../domain/Task.ts"
import { resultUrl } from "./TaskRunner.ts"
import type * as TaskStore from "./TaskStore.ts"

/** Whether the file asset's retention ran out at `now`. */
export const isExpired = (stored: TaskStore.StoredAsset, now: Date): boolean =>
  stored.expiresAt !== undefined && Date.parse(stored.expiresAt) <= now.getTime()

export const asset = (stored: TaskStore.StoredAsset, now: Date): Task.Asset => ({
  id: stored.id,
  type: stored.type,
  ...(stored.resultId === undefined || isExpired(stored, now) ? {} : { url: resultUrl(stored.resultId) }),
  ...(stored.text === undefined ? {} : { text: stored.text })
})

/** The earliest expiry among the files, before it; `dataRemoved` from then on; nothing for a task without files. */
const retention = (assets: ReadonlyArray<TaskStore.StoredAsset>, now: Date): { expiresAt?: string; dataRemoved?: true } => {
  let earliest: string | undefined
  for (const stored of assets) {
    if (stored.expiresAt !== undefined && (earliest === undefined || Date.parse(stored.expiresAt) < Date.parse(earliest))) {
      earliest = stored.expiresAt
    }
  }
  if (earliest === undefined) return {}
  return Date.parse(earliest) <= now.getTime() ? { dataRemoved: true } : { expiresAt: earliest }
}

/** GET /api/v1/jobs/{id} and the items of GET /api/v1/jobs, at `now`. */
export const task = (record: TaskStore.TaskRecord, now: Date): Task.Task => ({
  id: record.id,
  model: record.model,
  status: record.status,
  errorCode: record.errorCode,
  priceMicros: record.priceMicros,
  currency: "USD",
  createdAt: record.createdAt.toISOString(),
  updatedAt: record.updatedAt.toISOString(),
  assets: record.assets.map((stored) => asset(stored, now)),
  provider: record.provider,
  ...(record.status === "running" && record.progress !== undefined ? { progress: record.progress } : {}),
  ...retention(record.assets, now)
})

/** POST /api/v1/jobs: the task and whether the Idempotency-Key matched an earlier submission. */
export const submitted = (record: TaskStore.TaskRecord, replayed: boolean, now: Date): Task.SubmittedTask => ({
  ...task(record, now),
  replayed
})
