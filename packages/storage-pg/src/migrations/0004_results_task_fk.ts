/**
 * A result names the task that produced it: `results.task_id` gets the foreign key to `tasks`
 * that migration 1 left out only because the conformance suite once recorded results for tasks
 * it never admitted. The kernel writes a result only for a task it holds a lease on, so no row
 * of an existing database lacks its task. The existing `results_task` index serves the key's
 * checks.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [`ALTER TABLE results ADD CONSTRAINT results_task_id_fkey FOREIGN KEY (task_id) REFERENCES tasks (id)`]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
