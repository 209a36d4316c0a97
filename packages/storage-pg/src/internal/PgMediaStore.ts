/**
 * Media and result metadata, each port method one statement; `purgeOrphanResults` is PgOrphanSweep.
 * `putMedia` and `putResult` read the account's retention days in their INSERT; `expireMedia` and
 * `expireResults` read the due rows through `media_expiring` and `results_expiring`, skipping rows
 * another sweep holds.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { type Ids, MediaStore, type MediaReference } from "@taskmeter/kernel"
import * as Failures from "./Failures.ts"
import * as OrphanSweep from "./PgOrphanSweep.ts"
import type { MediaRow, ResultRow } from "./Rows.ts"
import { toMedia, toResult } from "./Rows.ts"

/**
 * Marks up to `limit` due results removed, earliest first, through `results_expiring`; their ids
 * and blob keys. The ids as an array, so that the UPDATE finds them by primary key, not by a join
 * that a generic plan may make a scan of every result.
 */
export const expiringResults = (sql: SqlClient.SqlClient, now: Date, limit: number) =>
  sql<{ readonly id: string; readonly blob_key: string }>`UPDATE results SET data_removed = true
    WHERE id = ANY(ARRAY(
      SELECT id FROM results WHERE NOT data_removed AND expires_at <= ${now}
      ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED))
    RETURNING id, blob_key`

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  /** The expiry a file is stored with: by its account's retention days when set, else the one given. */
  const expiryOf = (record: { readonly accountId: string; readonly createdAt: Date; readonly expiresAt: Date }) =>
    sql`coalesce(${record.createdAt}::timestamptz
      + (SELECT result_retention_days FROM accounts WHERE id = ${record.accountId}) * interval '1 day',
      ${record.expiresAt}::timestamptz)`

  return MediaStore.MediaStore.of({
    putMedia: (record) =>
      Failures.run(
        "putMedia",
        sql<{ readonly expires_at: Date }>`INSERT INTO media
            (reference, account_id, content_type, size_bytes, sha256, blob_key, created_at, expires_at)
          VALUES (${record.reference}, ${record.accountId}, ${record.contentType}, ${record.sizeBytes}::bigint,
            ${record.sha256}, ${record.blobKey}, ${record.createdAt}, ${expiryOf(record)})
          RETURNING expires_at`.pipe(Effect.map((rows) => rows[0]!.expires_at))
      ),

    getMedia: (accountId, reference) =>
      Failures.run(
        "getMedia",
        sql<MediaRow>`SELECT * FROM media WHERE reference = ${reference} AND account_id = ${accountId}`.pipe(
          Effect.map((rows) => (rows.length === 0 ? undefined : toMedia(rows[0])))
        )
      ),

    missingMedia: (accountId, references, now) =>
      references.length === 0
        ? Effect.succeed({ missing: [], expired: [] })
        : Failures.run(
            "missingMedia",
            sql<{ readonly reference: string; readonly expired: boolean }>`SELECT reference, expires_at <= ${now} AS expired
            FROM media WHERE account_id = ${accountId} AND reference = ANY(${references}::text[])`.pipe(
              Effect.map((rows) => {
                const owned = new Map(rows.map((row) => [row.reference, row.expired]))
                return {
                  missing: references.filter((reference) => !owned.has(reference)),
                  expired: references.filter((reference) => owned.get(reference) === true)
                }
              })
            )
          ),

    putResult: (record) =>
      Failures.run(
        "putResult",
        sql<{ readonly expires_at: Date }>`INSERT INTO results
            (id, account_id, task_id, content_type, size_bytes, sha256, blob_key, created_at, expires_at)
          VALUES (${record.id}, ${record.accountId}, ${record.taskId}, ${record.contentType}, ${record.sizeBytes}::bigint,
            ${record.sha256}, ${record.blobKey}, ${record.createdAt}, ${expiryOf(record)})
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
            expiringResults(sql, now, limit).pipe(
              Effect.map((rows) => rows.map((row) => ({ id: row.id as Ids.ResultId, blobKey: row.blob_key })))
            )
          ),

    expireMedia: (now, limit) =>
      limit < 1
        ? Effect.succeed([])
        : Failures.run(
            "expireMedia",
            sql<{ readonly reference: string; readonly blob_key: string }>`UPDATE media SET data_removed = true
              WHERE reference = ANY(ARRAY(
                SELECT reference FROM media WHERE NOT data_removed AND expires_at <= ${now}
                ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED))
              RETURNING reference, blob_key`.pipe(
              Effect.map((rows) =>
                rows.map((row) => ({ reference: row.reference as MediaReference.MediaReference, blobKey: row.blob_key }))
              )
            )
          )
  })
})
