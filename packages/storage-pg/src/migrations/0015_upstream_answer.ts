/**
 * The operator queue of reconciliation_required (TaskStore.listHeld): `tasks.upstream_answer`, what
 * the upstream last answered when the worker gave the task up, at most 1000 characters. The queue
 * is read through `tasks_awaiting_reconciliation` (migration 0001), so no index is added.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [`ALTER TABLE tasks ADD COLUMN upstream_answer text CHECK (char_length(upstream_answer) <= 1000)`]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
