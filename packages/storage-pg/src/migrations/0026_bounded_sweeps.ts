/**
 * Housekeeping that reads only new work: `chores` holds one row per housekeeping chore (who runs
 * it, until when, when it was last taken), so that one process runs each chore at a time and only
 * when due; the orphan-result sweep reads results after its mark in `results_created` order and
 * keeps, in `orphan_sweep_pending`, the results it read while their task was unfinished.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE TABLE chores (
    name text PRIMARY KEY,
    holder text,
    lease_until timestamptz,
    taken_at timestamptz NOT NULL
  )`,
  `CREATE TABLE sweep_marks (
    name text PRIMARY KEY,
    created_at timestamptz,
    id text
  )`,
  `INSERT INTO sweep_marks (name) VALUES ('orphan_results')`,
  `CREATE TABLE orphan_sweep_pending (
    result_id text PRIMARY KEY REFERENCES results (id) ON DELETE CASCADE
  )`,
  // The orphan sweep's window: the results after its mark, oldest first.
  `CREATE INDEX results_created ON results (created_at, id)`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
