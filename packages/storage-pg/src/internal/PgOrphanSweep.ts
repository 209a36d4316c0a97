/**
 * `MediaStore.purgeOrphanResults` on PostgreSQL: one transaction that holds the sweep's mark in
 * sweep_marks (`FOR UPDATE SKIP LOCKED`, so one sweep at a time and none waits), judges the results
 * in orphan_sweep_pending whose task has finished, then the next results after the mark through
 * `results_created` (`window`), keeps the unfinished ones pending, moves the mark and deletes the
 * orphans. It reads what was stored since the last call, not every result kept.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { Ids, MediaStore } from "@taskmeter/kernel"
import { TaskStatus } from "@taskmeter/kernel"
import * as Failures from "./Failures.ts"

/** The statuses no move leaves: a task's assets never change once it is in one. */
const finalList = TaskStatus.TaskStatus.literals
  .filter((status) => TaskStatus.transitions[status].length === 0)
  .map((status) => `'${status}'`)
  .join(", ")

/** The orphan sweep's row in sweep_marks. */
const MARK = "orphan_results"

/** A result as the sweep reads it: `final` its task's status, `unnamed` by its task's assets. */
interface JudgedRow {
  readonly id: string
  readonly blob_key: string
  readonly created_at: Date
  readonly final: boolean
  readonly unnamed: boolean
}

/** The last result judged, in (created_at, id) order; null in both before the first. */
export interface Mark {
  readonly created_at: Date | null
  readonly id: string | null
}

const judgedColumns = `r.id, r.blob_key, r.created_at, t.status IN (${finalList}) AS final,
  NOT t.assets @> jsonb_build_array(jsonb_build_object('resultId', r.id)) AS unnamed`

/** The next `limit` results after `mark` created before `before`, oldest first, with their task's verdict. */
export const window = (sql: SqlClient.SqlClient, mark: Mark, before: Date, limit: number) =>
  mark.created_at === null || mark.id === null
    ? sql<JudgedRow>`SELECT ${sql.literal(judgedColumns)} FROM results r JOIN tasks t ON t.id = r.task_id
        WHERE r.created_at < ${before}
        ORDER BY r.created_at, r.id LIMIT ${limit}`
    : sql<JudgedRow>`SELECT ${sql.literal(judgedColumns)} FROM results r JOIN tasks t ON t.id = r.task_id
        WHERE r.created_at < ${before} AND (r.created_at, r.id) > (${mark.created_at}, ${mark.id})
        ORDER BY r.created_at, r.id LIMIT ${limit}`

export const purge =
  (sql: SqlClient.SqlClient): MediaStore.MediaStore["Service"]["purgeOrphanResults"] =>
  (createdBefore, limit) =>
    limit < 1
      ? Effect.succeed({ purged: [], judged: 0 })
      : Failures.run(
          "purgeOrphanResults",
          sql.withTransaction(
            Effect.gen(function* () {
              yield* sql`INSERT INTO sweep_marks (name) VALUES (${MARK}) ON CONFLICT (name) DO NOTHING`
              const [mark] = yield* sql<Mark>`SELECT created_at, id FROM sweep_marks WHERE name = ${MARK} FOR UPDATE SKIP LOCKED`
              if (mark === undefined) return { purged: [], judged: 0 }
              const finished = yield* sql<JudgedRow>`SELECT ${sql.literal(judgedColumns)}
                FROM orphan_sweep_pending p JOIN results r ON r.id = p.result_id JOIN tasks t ON t.id = r.task_id
                WHERE t.status IN (${sql.literal(finalList)})
                LIMIT ${limit}`
              const next = finished.length === limit ? [] : yield* window(sql, mark, createdBefore, limit - finished.length)
              if (finished.length > 0) {
                yield* sql`DELETE FROM orphan_sweep_pending WHERE result_id = ANY(${finished.map((row) => row.id)}::text[])`
              }
              const unfinished = next.filter((row) => !row.final).map((row) => row.id)
              if (unfinished.length > 0) {
                yield* sql`INSERT INTO orphan_sweep_pending (result_id) SELECT unnest(${unfinished}::text[])
                  ON CONFLICT (result_id) DO NOTHING`
              }
              const last = next.at(-1)
              if (last !== undefined) {
                yield* sql`UPDATE sweep_marks SET created_at = ${last.created_at}, id = ${last.id} WHERE name = ${MARK}`
              }
              const orphans = [...finished, ...next].filter((row) => row.final && row.unnamed).map((row) => row.id)
              // The conditions again, so that the promise holds whatever was judged above.
              const purged =
                orphans.length === 0
                  ? []
                  : yield* sql<{ readonly id: string; readonly blob_key: string }>`DELETE FROM results r USING tasks t
                    WHERE r.id = ANY(${orphans}::text[]) AND t.id = r.task_id
                      AND t.status IN (${sql.literal(finalList)})
                      AND NOT t.assets @> jsonb_build_array(jsonb_build_object('resultId', r.id))
                    RETURNING r.id, r.blob_key`
              return {
                purged: purged.map((row) => ({ id: row.id as Ids.ResultId, blobKey: row.blob_key })),
                judged: finished.length + next.length
              }
            })
          )
        )
