/**
 * Housekeeping that reads only new work: `chores` holds one row per housekeeping chore (who runs
 * it, until when, when it was last taken), so that one process runs each chore at a time and only
 * when due; the orphan-result sweep reads results after its mark in `results_created` order and
 * keeps, in `orphan_sweep_pending`, the results it read while their task was unfinished.
 * Retention: each result's and upload's `expires_at` (stamped when stored, by the account's
 * `result_retention_days` when the operator set them) and `data_removed` once Housekeeping took
 * its file; the expiry sweep reads only what is due through `results_expiring` and
 * `media_expiring`. Files stored before this migration expire 30 days (the default) after they
 * were stored.
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
  `CREATE INDEX results_created ON results (created_at, id)`,
  `ALTER TABLE accounts ADD COLUMN result_retention_days integer CHECK (result_retention_days >= 1)`,
  `ALTER TABLE results ADD COLUMN expires_at timestamptz, ADD COLUMN data_removed boolean NOT NULL DEFAULT false`,
  `UPDATE results SET expires_at = created_at + interval '30 days'`,
  `ALTER TABLE results ALTER COLUMN expires_at SET NOT NULL`,
  // The expiry sweep's window: the results due and not yet removed, earliest first.
  `CREATE INDEX results_expiring ON results (expires_at) WHERE NOT data_removed`,
  `ALTER TABLE media ADD COLUMN expires_at timestamptz, ADD COLUMN data_removed boolean NOT NULL DEFAULT false`,
  `UPDATE media SET expires_at = created_at + interval '30 days'`,
  `ALTER TABLE media ALTER COLUMN expires_at SET NOT NULL`,
  `CREATE INDEX media_expiring ON media (expires_at) WHERE NOT data_removed`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
