/**
 * Time-ordered ids and the index diet (#22). `taskmeter_uuidv7()` makes a UUID version 7 (RFC
 * 9562: Unix milliseconds in the first 48 bits, 74 random bits), the SQL twin of the kernel's
 * `Uuid7`; every function that writes a ledger entry names it `'entry_' || taskmeter_uuidv7()`
 * from now on (rewritten in place from its current definition, so whatever an earlier migration
 * made of it is kept). Rows stored before keep their ids. Each index on tasks, ledger_entries
 * and idempotency_keys carries a comment naming the statement it serves, and
 * `tasks_account_status_newest` keeps no succeeded task: a list of succeeded tasks reads
 * `tasks_account_newest`, where nearly every task is one.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const RANDOM_ENTRY_ID = `'entry_' || gen_random_uuid()`
const ORDERED_ENTRY_ID = `'entry_' || taskmeter_uuidv7()`

const uuidv7 = `CREATE FUNCTION taskmeter_uuidv7() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
        FROM 1 FOR 6),
      52, 1), 53, 1),
    'hex')::uuid
$$`

/** Every function of this schema that makes random entry ids, made again with ordered ones. */
const orderedEntryIds = `DO $$
DECLARE
  f oid;
BEGIN
  FOR f IN
    SELECT p.oid FROM pg_proc p
    WHERE p.pronamespace = current_schema()::regnamespace AND strpos(p.prosrc, ${quote(RANDOM_ENTRY_ID)}) > 0
  LOOP
    EXECUTE replace(pg_get_functiondef(f), ${quote(RANDOM_ENTRY_ID)}, ${quote(ORDERED_ENTRY_ID)});
  END LOOP;
END
$$`

function quote(text: string): string {
  return `'${text.replaceAll("'", "''")}'`
}

/** What each index is for: kept in schema.sql by pg_dump. */
const served: ReadonlyArray<readonly [index: string, statement: string]> = [
  ["tasks_pkey", "GET /api/v1/jobs/{id} (poll), the worker's writes to its task by id, a replayed Idempotency-Key's task"],
  ["tasks_account_newest", "GET /api/v1/jobs: the account's tasks newest first, and its before= cursor"],
  [
    "tasks_account_status_newest",
    "GET /api/v1/jobs?status= for every status but succeeded: one range per account and status, newest first"
  ],
  ["tasks_account_model_newest", "GET /api/v1/jobs?model=: one range per account and model, newest first"],
  ["tasks_awaiting_reconciliation", "the reconciliation pass and admin list of reconciliation_required tasks, by id"],
  ["tasks_unfinished", "the worker's claim of the oldest claimable task, and the backlog count of /readyz and /metrics"],
  ["ledger_entries_pkey", "GET /api/v1/usage?before=<entry id>: the page cursor; one row per entry id"],
  ["ledger_entries_account_newest", "GET /api/v1/usage: the account's entries newest first"],
  ["ledger_entries_external_ref", "taskmeter_credit: one grant/refund/adjustment per external reference (payments, admin)"],
  [
    "ledger_entries_once_per_task",
    "the books: at most one reserve, one charge and one release per task (insert-time check only)"
  ],
  ["ledger_entries_once_per_chat_request", "the books: at most one reserve, one charge and one release per chat request"],
  ["ledger_entries_lease_released_once", "the books: at most one release per chat lease"],
  ["idempotency_keys_pkey", "admission: the exact (account, Idempotency-Key) lookup and upsert"],
  ["idempotency_keys_expires_at", "housekeeping: purgeIdempotencyKeys, the oldest expired keys first"]
]

const narrowStatusList = [
  `DROP INDEX tasks_account_status_newest`,
  `CREATE INDEX tasks_account_status_newest ON tasks (account_id, status, created_at DESC, seq DESC)
    WHERE status <> 'succeeded'`
]

const statements = [
  uuidv7,
  orderedEntryIds,
  ...narrowStatusList,
  ...served.map(([index, statement]) => `COMMENT ON INDEX ${index} IS ${quote(`Serves ${statement}.`)}`)
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
