/**
 * Media and result metadata, each port method one statement; `purgeOrphanResults` is PgOrphanSweep.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { MediaStore } from "@taskmeter/kernel"
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
        Effect.asVoid(sql`INSERT INTO results (id, account_id, task_id, content_type, size_bytes, sha256, blob_key, created_at)
          VALUES (${record.id}, ${record.accountId}, ${record.taskId}, ${record.contentType}, ${record.sizeBytes}::bigint,
            ${record.sha256}, ${record.blobKey}, ${record.createdAt})`)
      ),

    getResult: (accountId, id) =>
      Failures.run(
        "getResult",
        sql<ResultRow>`SELECT * FROM results WHERE id = ${id} AND account_id = ${accountId}`.pipe(
          Effect.map((rows) => (rows.length === 0 ? undefined : toResult(rows[0])))
        )
      ),

    purgeOrphanResults: OrphanSweep.purge(sql)
  })
})
