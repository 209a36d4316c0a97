/**
 * Media and result metadata, each port method one statement; `purgeOrphanResults` is PgOrphanSweep.
 * `putResult` reads the account's retention days in its INSERT; `expireResults` reads the due
 * results through `results_expiring`, skipping rows another sweep holds.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { type Ids, MediaStore } from "@taskmeter/kernel"
import * as Failures from "./Failures.ts"
import * as OrphanSweep from "./PgOrphanSweep.ts"
import type { MediaRow, ResultRow } from "./Rows.ts"
import { toMedia, toResult } from "./Rows.ts"

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  return MediaStore.MediaStore.of({
    putMedia: (record) =>
      Failures.run(
        "putMedia",
        Effect.asVoid(sql`INSERT INTO media (reference, account_id, content_type, size_bytes, sha256, blob_key, created_at)
          VALUES (${record.reference}, ${record.accountId}, ${record.contentType}, ${record.sizeBytes}::bigint,
            ${record.sha256}, ${record.blobKey}, ${record.createdAt})`)
      ),

    getMedia: (accountId, reference) =>
      Failures.run(
        "getMedia",
        sql<MediaRow>`SELECT * FROM media WHERE reference = ${reference} AND account_id = ${accountId}`.pipe(
          Effect.map((rows) => (rows.length === 0 ? undefined : toMedia(rows[0])))
        )
      ),

    missingMedia: (accountId, references) =>
      references.length === 0
        ? Effect.succeed([])
        : Failures.run(
            "missingMedia",
            sql<{ readonly reference: string }>`SELECT reference FROM media
            WHERE account_id = ${accountId} AND reference = ANY(${references}::text[])`.pipe(
              Effect.map((rows) => {
                const owned = new Set(rows.map((row) => row.reference))
                return references.filter((reference) => !owned.has(reference))
              })
            )
          ),

    putResult: (record) =>
      Failures.run(
        "putResult",
        sql<{ readonly expires_at: Date }>`INSERT INTO results
            (id, account_id, task_id, content_type, size_bytes, sha256, blob_key, created_at, expires_at)
          VALUES (${record.id}, ${record.accountId}, ${record.taskId}, ${record.contentType}, ${record.sizeBytes}::bigint,
            ${record.sha256}, ${record.blobKey}, ${record.createdAt},
            coalesce(${record.createdAt}::timestamptz
              + (SELECT result_retention_days FROM accounts WHERE id = ${record.accountId}) * interval '1 day',
              ${record.expiresAt}::timestamptz))
          RETURNING expires_at`.pipe(Effect.map((rows) => rows[0]!.expires_at))
      ),

    getResult: (accountId, id) =>
      Failures.run(
        "getResult",
        sql<ResultRow>`SELECT * FROM results WHERE id = ${id} AND account_id = ${accountId}`.pipe(
          Effect.map((rows) => (rows.length === 0 ? undefined : toResult(rows[0])))
        )
      ),

    purgeOrphanResults: OrphanSweep.purge(sql),

    expireResults: (now, limit) =>
      limit < 1
        ? Effect.succeed([])
        : Failures.run(
            "expireResults",
            sql<{ readonly id: string; readonly blob_key: string }>`UPDATE results SET data_removed = true
              WHERE id IN (
                SELECT id FROM results WHERE NOT data_removed AND expires_at <= ${now}
                ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
              RETURNING id, blob_key`.pipe(
              Effect.map((rows) => rows.map((row) => ({ id: row.id as Ids.ResultId, blobKey: row.blob_key })))
            )
          )
  })
})
