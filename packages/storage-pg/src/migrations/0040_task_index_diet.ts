/**
 * Task indexes without the settle's churn (#22). A task is admitted queued and settled later by an
 * UPDATE that changes `status` (indexed, so never HOT): the new version enters every index whose
 * key or predicate it meets, and the queued version's entries stay until VACUUM.
 * - `tasks_account_status_newest` held every status but succeeded, so every task entered it while
 *   unfinished and left on settle: it now holds failed and reconciliation_required only; an
 *   account's unfinished tasks are listed from `tasks_unfinished` (the backlog newest first, the
 *   account and status checked on the rows: bounded by the backlog, not by stored work).
 * - `tasks_account_newest` loses its trailing `status = 'succeeded'`: with it, a settled task's key
 *   differed from its queued version's and both stayed as separate entries; without it they are
 *   duplicates that B-tree deduplication and bottom-up deletion keep in one place.
 *   `?status=succeeded` checks the status on the rows of the account's newest tasks (its unfinished
 *   and failed ones are read and skipped).
 * - `results_task` is dropped: it served only the foreign key's check when a task is deleted or its
 *   id changes, which nothing does (a result's insert checks its task through `tasks_pkey`).
 * Built without CONCURRENTLY, as migration 0038: writes to `tasks` wait while each index is built.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`

const rebuilt: ReadonlyArray<readonly [index: string, definition: string, statement: string]> = [
  [
    "tasks_account_status_newest",
    "tasks (account_id, status, created_at, seq) WHERE status IN ('failed', 'reconciliation_required')",
    "GET /api/v1/jobs?status=failed|reconciliation_required: one range per account and status, newest first (read backward)"
  ],
  [
    "tasks_account_newest",
    "tasks (account_id, created_at, seq)",
    "GET /api/v1/jobs: the account's tasks newest first (read backward), its before= cursor, and ?status=succeeded (checked on the rows)"
  ]
]

const statements = [
  ...rebuilt.flatMap(([index, definition, statement]) => [
    `CREATE INDEX ${index}_narrow ON ${definition}`,
    `DROP INDEX ${index}`,
    `ALTER INDEX ${index}_narrow RENAME TO ${index}`,
    `COMMENT ON INDEX ${index} IS ${quote(`Serves ${statement}.`)}`
  ]),
  `DROP INDEX results_task`,
  `COMMENT ON INDEX tasks_unfinished IS ${quote(
    "Serves the worker's claim of the oldest claimable task, the backlog count of /readyz and /metrics, and GET /api/v1/jobs?status=queued|submitting|running (the backlog newest first, read backward; the account and status checked on the rows)."
  )}`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
