/**
 * Task cancel across processes: `tasks.cancel_requested_at` records the owner's cancel of a task
 * a worker holds past queued; the worker holding the lease reads it with the task at its next
 * write or poll and asks the upstream to cancel. A queued task is failed at once instead.
 * Filtered task lists (GET /api/v1/jobs?status=|model=) read one range of an index each, in the
 * order of tasks_account_newest.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `ALTER TABLE tasks ADD COLUMN cancel_requested_at timestamptz`,
  `CREATE INDEX tasks_account_status_newest ON tasks (account_id, status, created_at DESC, seq DESC)`,
  `CREATE INDEX tasks_account_model_newest ON tasks (account_id, model, created_at DESC, seq DESC)`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
