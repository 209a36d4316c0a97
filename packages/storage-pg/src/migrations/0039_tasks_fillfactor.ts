/**
 * Room on each `tasks` page for the later versions of the rows admitted into it (#22). A task is
 * inserted queued and small, then each status change writes a new, larger version (status is
 * indexed: never HOT); with full pages that version moved to another page, and vacuum then listed
 * in every old page a gap that fits a queued row but not its settled one, so admissions landed
 * on a different old page each (a full-page image after each checkpoint). With a fillfactor an
 * insert needs the row plus the reserve free, so such gaps are skipped and admissions fill few
 * pages in turn, while an update may use the reserve: a lease or progress update can stay HOT and
 * a status change on the row's page. Applies to pages filled from now on; no rewrite.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE tasks SET (fillfactor = 80)`.unprepared
})
