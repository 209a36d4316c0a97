/**
 * Purging expired Idempotency-Keys (TaskStore.purgeIdempotencyKeys): the B-tree
 * `idempotency_keys_expires_at` finds the oldest expired keys without reading the table, and
 * `taskmeter_admit` now upserts a reused key, so a purge deleting it meanwhile cannot leave the new
 * task without its key (the bulk path of 0007 needs no change). Why a B-tree: docs/decisions.md,
 * Storage; its cost and build time: bench/RESULTS.md.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at)`,
  `CREATE OR REPLACE FUNCTION taskmeter_admit(
    p_task_id text,
    p_account_id text,
    p_api_key_id text,
    p_model text,
    p_input jsonb,
    p_price_micros bigint,
    p_unit_micros bigint,
    p_quantity integer,
    p_settlement text,
    p_created_at timestamptz,
    p_deadline_at timestamptz,
    p_idempotency_key text,
    p_fingerprint text,
    p_idempotency_expires_at timestamptz,
    p_submissions_per_minute integer,
    p_max_unfinished_tasks integer,
    p_key_usage_limit integer
  ) RETURNS TABLE (outcome text, detail bigint, task tasks)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_account accounts;
    v_key idempotency_keys;
    v_existing tasks;
    v_task tasks;
    v_window_start timestamptz;
    v_in_window integer;
  BEGIN
    SELECT * INTO v_account FROM accounts a WHERE a.id = p_account_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
      RAISE foreign_key_violation USING MESSAGE = format('account %s does not exist', p_account_id);
    END IF;

    SELECT * INTO v_key FROM idempotency_keys k
      WHERE k.account_id = p_account_id AND k.idempotency_key = p_idempotency_key;
    IF v_key.task_id IS NOT NULL AND v_key.expires_at > p_created_at THEN
      SELECT * INTO v_existing FROM tasks t WHERE t.id = v_key.task_id;
      IF v_key.request_fingerprint = p_fingerprint THEN
        RETURN QUERY SELECT 'Replayed'::text, NULL::bigint, v_existing;
      ELSE
        RETURN QUERY SELECT 'IdempotencyConflict'::text, NULL::bigint, v_existing;
      END IF;
      RETURN;
    END IF;

    IF p_api_key_id IS NOT NULL AND p_key_usage_limit IS NOT NULL
       AND (SELECT k.usage_count FROM api_keys k WHERE k.id = p_api_key_id) >= p_key_usage_limit THEN
      RETURN QUERY SELECT 'KeyUsageExceeded'::text, NULL::bigint, NULL::tasks;
      RETURN;
    END IF;

    IF v_account.submissions_window_start IS NULL
       OR p_created_at >= v_account.submissions_window_start + interval '1 minute' THEN
      v_window_start := p_created_at;
      v_in_window := 0;
    ELSE
      v_window_start := v_account.submissions_window_start;
      v_in_window := v_account.submissions_in_window;
    END IF;
    IF v_in_window >= p_submissions_per_minute THEN
      RETURN QUERY SELECT 'RateLimited'::text,
        greatest(1, ceil(extract(epoch FROM v_window_start + interval '1 minute' - p_created_at)))::bigint,
        NULL::tasks;
      RETURN;
    END IF;

    IF v_account.unfinished_tasks >= p_max_unfinished_tasks THEN
      RETURN QUERY SELECT 'ConcurrencyLimited'::text, NULL::bigint, NULL::tasks;
      RETURN;
    END IF;

    IF v_account.payment_review THEN
      RETURN QUERY SELECT 'PaymentReviewRequired'::text, NULL::bigint, NULL::tasks;
      RETURN;
    END IF;

    IF v_account.balance_micros - v_account.reserved_micros < p_price_micros THEN
      RETURN QUERY SELECT 'InsufficientCredits'::text,
        v_account.balance_micros - v_account.reserved_micros, NULL::tasks;
      RETURN;
    END IF;

    UPDATE accounts a SET
      reserved_micros = a.reserved_micros + p_price_micros,
      unfinished_tasks = a.unfinished_tasks + 1,
      submissions_window_start = v_window_start,
      submissions_in_window = v_in_window + 1
      WHERE a.id = p_account_id;

    INSERT INTO tasks (
      id, account_id, api_key_id, model, input, status, price_micros, unit_micros, quantity, settlement,
      created_at, updated_at, deadline_at
    ) VALUES (
      p_task_id, p_account_id, p_api_key_id, p_model, p_input, 'queued', p_price_micros, p_unit_micros,
      p_quantity, p_settlement, p_created_at, p_created_at, p_deadline_at
    ) RETURNING * INTO v_task;

    -- The key read above is absent or expired, and under the account lock no other admission
    -- can change it; only a purge can, by deleting it: then this inserts it anew.
    INSERT INTO idempotency_keys (account_id, idempotency_key, request_fingerprint, task_id, expires_at)
      VALUES (p_account_id, p_idempotency_key, p_fingerprint, p_task_id, p_idempotency_expires_at)
      ON CONFLICT (account_id, idempotency_key) DO UPDATE
        SET request_fingerprint = excluded.request_fingerprint, task_id = excluded.task_id,
          expires_at = excluded.expires_at;

    INSERT INTO ledger_entries (id, account_id, kind, amount_micros, task_id, created_at)
      VALUES ('entry_' || gen_random_uuid(), p_account_id, 'reserve', p_price_micros, p_task_id, p_created_at);

    IF p_api_key_id IS NOT NULL THEN
      UPDATE api_keys k SET usage_count = k.usage_count + 1 WHERE k.id = p_api_key_id;
    END IF;

    RETURN QUERY SELECT 'Admitted'::text, NULL::bigint, v_task;
  END
  $fn$`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
