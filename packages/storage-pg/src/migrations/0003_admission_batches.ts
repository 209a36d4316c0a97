/**
 * Admission in batches: `taskmeter_admit_batch` runs `taskmeter_admit` for each admission of a JSON
 * array in one transaction, in order (a repeated Idempotency-Key in the batch replays the first),
 * and answers each by its ordinal. Accounts are locked in id order, so concurrent batches cannot
 * deadlock. Why batches: docs/decisions.md, Storage.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE FUNCTION taskmeter_admit_batch(p_admissions jsonb)
  RETURNS TABLE (ordinal integer, outcome text, detail bigint, task tasks)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    r record;
  BEGIN
    FOR r IN
      SELECT * FROM jsonb_to_recordset(p_admissions) AS x(
        ordinal integer, task_id text, account_id text, api_key_id text, model text, input jsonb,
        price_micros bigint, unit_micros bigint, quantity integer, settlement text, created_at timestamptz,
        deadline_at timestamptz, idempotency_key text, fingerprint text, idempotency_expires_at timestamptz,
        submissions_per_minute integer, max_unfinished_tasks integer, key_usage_limit integer
      )
      ORDER BY x.account_id COLLATE "C", x.ordinal
    LOOP
      RETURN QUERY SELECT r.ordinal, a.outcome, a.detail, a.task
        FROM taskmeter_admit(
          r.task_id, r.account_id, r.api_key_id, r.model, r.input, r.price_micros, r.unit_micros, r.quantity,
          r.settlement, r.created_at, r.deadline_at, r.idempotency_key, r.fingerprint, r.idempotency_expires_at,
          r.submissions_per_minute, r.max_unfinished_tasks, r.key_usage_limit
        ) a;
    END LOOP;
  END
  $fn$`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
