/**
 * Storage port for the metadata of uploaded media and of result files; the bytes live in the
 * BlobStore under `blobKey`, and every read is scoped to the owning account. `purgeOrphanResults`
 * deletes result records no task's assets name (left when a success write was refused, see Outputs);
 * Housekeeping sweeps them with their files.
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { AccountId, ResultId, TaskId } from "../domain/Ids.ts"
import type { MediaReference } from "./MediaReference.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"

export interface MediaRecord {
  readonly reference: MediaReference
  readonly accountId: AccountId
  readonly contentType: string
  readonly sizeBytes: number
  /** Lower-case hex SHA-256 of the bytes. */
  readonly sha256: string
  readonly blobKey: string
  readonly createdAt: Date
}

export interface ResultRecord {
  readonly id: ResultId
  readonly accountId: AccountId
  readonly taskId: TaskId
  readonly contentType: string
  readonly sizeBytes: number
  readonly sha256: string
  readonly blobKey: string
  readonly createdAt: Date
}

/** An orphaned result record deleted by `purgeOrphanResults`: its file is left to remove. */
export interface PurgedResult {
  readonly id: ResultId
  readonly blobKey: string
}

export class MediaStore extends Context.Service<
  MediaStore,
  {
    readonly putMedia: (record: MediaRecord) => Effect.Effect<void, StoreUnavailable>
    readonly getMedia: (
      accountId: AccountId,
      reference: MediaReference
    ) => Effect.Effect<MediaRecord | undefined, StoreUnavailable>
    /** Which of these references the account does not own (empty when it owns all). */
    readonly missingMedia: (
      accountId: AccountId,
      references: ReadonlyArray<MediaReference>
    ) => Effect.Effect<ReadonlyArray<MediaReference>, StoreUnavailable>
    /** `record.taskId` names an admitted task (a SQL store holds it to that with a foreign key). */
    readonly putResult: (record: ResultRecord) => Effect.Effect<void, StoreUnavailable>
    readonly getResult: (accountId: AccountId, id: ResultId) => Effect.Effect<ResultRecord | undefined, StoreUnavailable>
    /**
     * Deletes up to `limit` orphaned result records, of any account, and answers their ids and
     * blob keys (none when `limit` is below 1); the files are the caller's to remove. An orphan
     * is a record whose task is succeeded or failed (the statuses no move leaves, so its assets
     * never change again), whose id is the `resultId` of none of that task's assets, and whose
     * `createdAt` is before `createdBefore`. A record of a task in any other status is never
     * deleted, however old: the task may still succeed with it. Purges running at once in
     * several processes delete each record once (each answers only what it deleted) and never
     * wait for each other; none ever deletes a record its task's assets name.
     */
    readonly purgeOrphanResults: (
      createdBefore: Date,
      limit: number
    ) => Effect.Effect<ReadonlyArray<PurgedResult>, StoreUnavailable>
  }
>()("@taskmeter/kernel/MediaStore") {}
