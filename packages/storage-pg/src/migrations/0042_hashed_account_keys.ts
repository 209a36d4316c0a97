/**
 * Per-account indexes keyed by an 8-byte hash of the account id (#22): `tasks_account_newest`,
 * `tasks_account_model_newest`, `tasks_account_status_newest` and `ledger_entries_account_newest`
 * lead with `hashtextextended(account_id, 0)` instead of the 42-byte id. Their statements range
 * over the hash, and the store keeps only the account's own rows (internal/AccountRows.ts), so two
 * accounts whose ids share a hash read each other's entries and skip them.
 * Built without CONCURRENTLY, as migration 0038: writes to each table wait while its index is built.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`

const ACCOUNT = "hashtextextended(account_id, 0)"

const rebuilt: ReadonlyArray<readonly [index: string, definition: string, statement: string]> = [
  [
    "tasks_account_newest",
    `tasks (${ACCOUNT}, created_at, seq)`,
    "GET /api/v1/jobs: the account's tasks newest first (read backward), its before= cursor, and ?status=succeeded (checked on the rows)"
  ],
  [
    "tasks_account_model_newest",
    `tasks (${ACCOUNT}, model, created_at, seq)`,
    "GET /api/v1/jobs?model=: one range per account and model, newest first (read backward)"
  ],
  [
    "tasks_account_status_newest",
    `tasks (${ACCOUNT}, status, created_at, seq) WHERE status IN ('failed', 'reconciliation_required')`,
    "GET /api/v1/jobs?status=failed|reconciliation_required: one range per account and status, newest first (read backward)"
  ],
  [
    "ledger_entries_account_newest",
    `ledger_entries (${ACCOUNT}, seq)`,
    "GET /api/v1/usage: the account's entries newest first (read backward)"
  ]
]

const statements = rebuilt.flatMap(([index, definition, statement]) => [
  `CREATE INDEX ${index}_hashed ON ${definition}`,
  `DROP INDEX ${index}`,
  `ALTER INDEX ${index}_hashed RENAME TO ${index}`,
  `COMMENT ON INDEX ${index} IS ${quote(`Serves ${statement}; keyed by the account id's hash, the id checked on the rows read.`)}`
])

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
