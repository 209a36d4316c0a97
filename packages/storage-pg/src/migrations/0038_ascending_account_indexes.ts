/**
 * The per-account indexes in ascending order (#22), read backward for newest first. Built
 * descending, an account's new entries went to the head of its range, and a full page split
 * there in half and never filled again: at 10M tasks these indexes were about half empty
 * (`ledger_entries_account_newest` 277 bytes per task, `tasks_account_model_newest` 204,
 * `tasks_account_newest` 154). Ascending, they go to the end of the range, where PostgreSQL
 * splits a page just after the new entry and leaves the older ones packed. The statements and
 * their plans are the same ranges, scanned backward. `tasks_account_newest` also carries whether
 * the task succeeded, so that `?status=succeeded` skips an account's other tasks inside the
 * index rather than on their heap pages (a boolean: every entry the same width, which the
 * split after the new entry needs).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`

const rebuilt: ReadonlyArray<readonly [index: string, definition: string, statement: string]> = [
  [
    "tasks_account_newest",
    "tasks (account_id, created_at, seq, (status = 'succeeded'))",
    "GET /api/v1/jobs: the account's tasks newest first (read backward), its before= cursor, and ?status=succeeded, checked in the index"
  ],
  [
    "tasks_account_status_newest",
    "tasks (account_id, status, created_at, seq) WHERE status <> 'succeeded'",
    "GET /api/v1/jobs?status= for every status but succeeded: one range per account and status, newest first (read backward)"
  ],
  [
    "tasks_account_model_newest",
    "tasks (account_id, model, created_at, seq)",
    "GET /api/v1/jobs?model=: one range per account and model, newest first (read backward)"
  ],
  [
    "ledger_entries_account_newest",
    "ledger_entries (account_id, seq)",
    "GET /api/v1/usage: the account's entries newest first (read backward)"
  ]
]

const statements = rebuilt.flatMap(([index, definition, statement]) => [
  `CREATE INDEX ${index}_ascending ON ${definition}`,
  `DROP INDEX ${index}`,
  `ALTER INDEX ${index}_ascending RENAME TO ${index}`,
  `COMMENT ON INDEX ${index} IS ${quote(`Serves ${statement}.`)}`
])

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
