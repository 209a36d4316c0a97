/**
 * Storage port for the metadata of uploaded media and of result files. The bytes live in the
 * BlobStore under `blobKey`; every read is scoped to the owning account.
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { AccountId, ResultId, TaskId } from "./Ids.ts"
import type { MediaReference } from "./MediaReference.ts"
import type { StoreUnavailable } from "./StoreError.ts"

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

export class MediaStore extends Context.Service<MediaStore, {
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
  readonly getResult: (
    accountId: AccountId,
    id: ResultId
  ) => Effect.Effect<ResultRecord | undefined, StoreUnavailable>
}>()("@taskmeter/kernel/MediaStore") {}
