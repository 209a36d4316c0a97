/**
 * Task cancel across processes: `tasks.cancel_requested_at` records the owner's cancel of a task
 * a worker holds past queued; the worker holding the lease reads it with the task at its next
 * write or poll and asks the upstream to cancel. A queued task is failed at once instead.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [`ALTER TABLE tasks ADD COLUMN cancel_requested_at timestamptz`]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
