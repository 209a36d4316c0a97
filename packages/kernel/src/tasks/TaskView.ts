/**
 * How a stored task is shown to its owner: the spec's Task shape, with file results linked at
 * `/api/v1/results/<uuid>` and text results inline, and the provider that ran it. Nothing else of the record (input, account,
 * upstream reference, lease) leaves the server.
 */
import type * as Task from "../domain/Task.ts"
import { resultUrl } from "./TaskRunner.ts"
import type * as TaskStore from "./TaskStore.ts"

export const asset = (stored: TaskStore.StoredAsset): Task.Asset => ({
  id: stored.id,
  type: stored.type,
  ...(stored.resultId === undefined ? {} : { url: resultUrl(stored.resultId) }),
  ...(stored.text === undefined ? {} : { text: stored.text })
})

/** GET /api/v1/jobs/{id} and the items of GET /api/v1/jobs. */
export const task = (record: TaskStore.TaskRecord): Task.Task => ({
  id: record.id,
  model: record.model,
  status: record.status,
  errorCode: record.errorCode,
  priceMicros: record.priceMicros,
  currency: "USD",
  createdAt: record.createdAt.toISOString(),
  updatedAt: record.updatedAt.toISOString(),
  assets: record.assets.map(asset),
  provider: record.provider
})

/** POST /api/v1/jobs: the task and whether the Idempotency-Key matched an earlier submission. */
export const submitted = (record: TaskStore.TaskRecord, replayed: boolean): Task.SubmittedTask => ({
  ...task(record),
  replayed
})
