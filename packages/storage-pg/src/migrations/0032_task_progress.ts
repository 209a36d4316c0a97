/**
 * A running task's latest progress report, a whole percent (TaskStore.noteProgress): a nullable
 * column on tasks, null until the upstream reports one. Adding it rewrites nothing, and it is in
 * no index, so its updates stay heap-only.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`ALTER TABLE tasks ADD COLUMN progress smallint CHECK (progress BETWEEN 0 AND 100)`).unprepared
})
