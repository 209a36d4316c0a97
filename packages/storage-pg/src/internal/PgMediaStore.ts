/**
 * Media and result metadata, each port method one statement. `purgeOrphanResults` is one DELETE of
 * results whose task is final and whose assets do not name them, picked `FOR UPDATE SKIP LOCKED`;
 * no index narrows it, so it reads every older result and its task (hence hourly: docs/decisions.md,
 * Tasks and providers).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Ids } from "@taskmeter/kernel"
import { MediaStore, TaskStatus } from "@taskmeter/kernel"
import * as Failures from "./Failures.ts"
import type { MediaRow, ResultRow } from "./Rows.ts"
import { toMedia, toResult } from "./Rows.ts"

/** The statuses no move leaves: a task's assets never change once it is in one. */
const finalList = TaskStatus.TaskStatus.literals
  .filter((status) => TaskStatus.transitions[status].length === 0)
  .map((status) => `'${status}'`)
  .join(", ")

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

    purgeOrphanResults: (createdBefore, limit) =>
      limit < 1
        ? Effect.succeed([])
        : Failures.run(
            "purgeOrphanResults",
            // SKIP LOCKED passes over the records another purge holds, so purges never wait for each
            // other, and a record deleted is answered by that one statement only. Locking only the
            // results (OF p) leaves the task rows to the workers. The outer conditions keep the
            // promise on their own, whatever the pick saw; a final task's status and assets cannot
            // change in between anyway.
            sql<{ readonly id: string; readonly blob_key: string }>`DELETE FROM results r
          USING tasks t
          WHERE r.ctid = ANY(ARRAY(
              SELECT p.ctid FROM results p JOIN tasks pt ON pt.id = p.task_id
              WHERE pt.status IN (${sql.literal(finalList)})
                AND p.created_at < ${createdBefore}
                AND NOT pt.assets @> jsonb_build_array(jsonb_build_object('resultId', p.id))
              LIMIT ${limit}
              FOR UPDATE OF p SKIP LOCKED
            ))
            AND t.id = r.task_id
            AND t.status IN (${sql.literal(finalList)})
            AND r.created_at < ${createdBefore}
            AND NOT t.assets @> jsonb_build_array(jsonb_build_object('resultId', r.id))
          RETURNING r.id, r.blob_key`.pipe(
              Effect.map((rows) => rows.map((row) => ({ id: row.id as Ids.ResultId, blobKey: row.blob_key })))
            )
          )
  })
})
