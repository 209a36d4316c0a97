/**
 * Storage port for the metadata of uploaded media and of result files; the bytes live in the
 * BlobStore under `blobKey`, and every read is scoped to the owning account. `purgeOrphanResults`
 * deletes result records no task's assets name (left when a success write was refused, see Outputs),
 * reading only the records stored since its last call; Housekeeping sweeps them with their files.
 * Each upload and result carries its `expiresAt` (Retention); `expireResults` and `expireMedia`
 * mark those past it as removed and answer their files, reading only what is due.
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
  /** When the upload expires; `putMedia` stores the account's own retention instead when it has one. */
  readonly expiresAt: Date
}

/** The references `missingMedia` refuses. */
export interface MissingMedia {
  /** Not uploads of the account (unknown, or another account's). */
  readonly missing: ReadonlyArray<MediaReference>
  /** Uploads of the account expired at the time asked. */
  readonly expired: ReadonlyArray<MediaReference>
}

/** A file `expireMedia` answers: its bytes are the caller's to remove. */
export interface ExpiredMedia {
  readonly reference: MediaReference
  readonly blobKey: string
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
  /**
   * When the file expires: `putResult` is given the default's (Retention) and stores the
   * account's own instead when it has one; reads answer what was stored.
   */
  readonly expiresAt: Date
}

/** An orphaned result record deleted by `purgeOrphanResults`: its file is left to remove. */
export interface PurgedResult {
  readonly id: ResultId
  readonly blobKey: string
}

/** What one `purgeOrphanResults` call did. */
export interface OrphanPass {
  readonly purged: ReadonlyArray<PurgedResult>
  /** Records read and judged; `limit` means there may be more to judge. */
  readonly judged: number
}

export class MediaStore extends Context.Service<
  MediaStore,
  {
    /** Answers the `expiresAt` stored: `createdAt` plus the account's retention days when set, else `record.expiresAt`. */
    readonly putMedia: (record: MediaRecord) => Effect.Effect<Date, StoreUnavailable>
    readonly getMedia: (
      accountId: AccountId,
      reference: MediaReference
    ) => Effect.Effect<MediaRecord | undefined, StoreUnavailable>
    /** Which of these references the account does not own, and which of its own expired at `now` (both empty: all usable). */
    readonly missingMedia: (
      accountId: AccountId,
      references: ReadonlyArray<MediaReference>,
      now: Date
    ) => Effect.Effect<MissingMedia, StoreUnavailable>
    /**
     * `record.taskId` names an admitted task (a SQL store holds it to that with a foreign key).
     * Answers the `expiresAt` stored: `record.createdAt` plus the account's retention days when
     * the operator set them, else `record.expiresAt`.
     */
    readonly putResult: (record: ResultRecord) => Effect.Effect<Date, StoreUnavailable>
    readonly getResult: (accountId: AccountId, id: ResultId) => Effect.Effect<ResultRecord | undefined, StoreUnavailable>
    /**
     * Judges up to `limit` result records of any account (none when `limit` is below 1) and
     * deletes the orphans among them, answering their ids and blob keys (the files are the
     * caller's to remove) and how many records it judged. An orphan is a record whose task is
     * succeeded or failed (the statuses no move leaves, so its assets never change again) and
     * whose id is the `resultId` of none of that task's assets. A call judges first the records
     * it left earlier because their task was unfinished and whose task has since finished, then
     * the records after the last one judged, in (`createdAt`, id) order, created before
     * `createdBefore`; a record whose task is unfinished is left for a later call, however old.
     * So each record is read once after its task finishes, and a call reads only what was stored
     * since the last one: a record stored with a `createdAt` before the last one judged is never
     * judged (callers sweep past a grace period longer than any writer's delay). A call while
     * another is under way judges nothing; none ever deletes a record its task's assets name.
     */
    readonly purgeOrphanResults: (createdBefore: Date, limit: number) => Effect.Effect<OrphanPass, StoreUnavailable>
    /**
     * Marks up to `limit` result records of any account whose `expiresAt` is at or before `now`
     * and not yet marked as removed, earliest first, and answers their ids and blob keys (the
     * files are the caller's to remove). A record is answered once; the records stay (the task
     * keeps naming them), and `getResult` still answers them.
     */
    readonly expireResults: (now: Date, limit: number) => Effect.Effect<ReadonlyArray<PurgedResult>, StoreUnavailable>
    /** As `expireResults`, for uploads. */
    readonly expireMedia: (now: Date, limit: number) => Effect.Effect<ReadonlyArray<ExpiredMedia>, StoreUnavailable>
  }
>()("@taskmeter/kernel/MediaStore") {}
