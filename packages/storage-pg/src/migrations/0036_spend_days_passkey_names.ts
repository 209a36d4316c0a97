/**
 * An account's spend per UTC day and model (LedgerStore.spend, GET /api/v1/usage/summary): the
 * charge entries of tasks and chat requests, summed into one row per account, day and model by a
 * statement trigger on ledger_entries, in the transaction that writes the charge. The summary
 * reads at most one row per day and model of its range, however long the journal grows. Charges
 * already in the journal are summed once here.
 * And a name per passkey, which its user gives it to tell passkeys apart (`Passkey` for those
 * registered before).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE TABLE account_spend_days (
    account_id text NOT NULL REFERENCES accounts (id),
    day date NOT NULL,
    model text NOT NULL,
    task_micros bigint NOT NULL CHECK (task_micros >= 0),
    chat_micros bigint NOT NULL CHECK (chat_micros >= 0),
    PRIMARY KEY (account_id, day, model)
  )`,
  `COMMENT ON TABLE account_spend_days IS 'Serves GET /api/v1/usage/summary: the charge entries of an account per UTC day and model, kept by taskmeter_roll_spend.'`,
  `CREATE FUNCTION taskmeter_roll_spend() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    -- Rows in key order: two transactions that add to the same rows wait for each other instead of deadlocking.
    INSERT INTO account_spend_days AS s (account_id, day, model, task_micros, chat_micros)
      SELECT e.account_id, (e.created_at AT TIME ZONE 'UTC')::date, coalesce(t.model, c.model),
          coalesce(sum(e.amount_micros) FILTER (WHERE e.task_id IS NOT NULL), 0),
          coalesce(sum(e.amount_micros) FILTER (WHERE e.chat_request_id IS NOT NULL), 0)
        FROM added e
        LEFT JOIN tasks t ON t.id = e.task_id
        LEFT JOIN chat_requests c ON c.id = e.chat_request_id
        WHERE e.kind = 'charge'
        GROUP BY 1, 2, 3
        ORDER BY 1, 2, 3
      ON CONFLICT (account_id, day, model) DO UPDATE SET
        task_micros = s.task_micros + excluded.task_micros,
        chat_micros = s.chat_micros + excluded.chat_micros;
    RETURN NULL;
  END
  $$`,
  `CREATE TRIGGER ledger_entries_roll_spend AFTER INSERT ON ledger_entries
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION taskmeter_roll_spend()`,
  `INSERT INTO account_spend_days (account_id, day, model, task_micros, chat_micros)
    SELECT e.account_id, (e.created_at AT TIME ZONE 'UTC')::date, coalesce(t.model, c.model),
        coalesce(sum(e.amount_micros) FILTER (WHERE e.task_id IS NOT NULL), 0),
        coalesce(sum(e.amount_micros) FILTER (WHERE e.chat_request_id IS NOT NULL), 0)
      FROM ledger_entries e
      LEFT JOIN tasks t ON t.id = e.task_id
      LEFT JOIN chat_requests c ON c.id = e.chat_request_id
      WHERE e.kind = 'charge' AND coalesce(t.model, c.model) IS NOT NULL
      GROUP BY 1, 2, 3`,
  `ALTER TABLE passkeys ADD COLUMN name text NOT NULL DEFAULT 'Passkey' CHECK (length(name) BETWEEN 1 AND 64)`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
