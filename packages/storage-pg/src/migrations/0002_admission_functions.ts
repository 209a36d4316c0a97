/**
 * Admission (`taskmeter_admit`), credit changes and key authentication (`taskmeter_authenticate`)
 * as functions, one statement and one transaction each. `taskmeter_admit` takes the account row lock
 * first (FOR NO KEY UPDATE), serializing one account's admissions so the Idempotency-Key check sees
 * every one committed before it; `taskmeter_authenticate` commits asynchronously (it writes only a
 * rate counter). Why: docs/decisions.md, Storage.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE FUNCTION taskmeter_admit(
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

    IF v_key.task_id IS NULL THEN
      INSERT INTO idempotency_keys (account_id, idempotency_key, request_fingerprint, task_id, expires_at)
        VALUES (p_account_id, p_idempotency_key, p_fingerprint, p_task_id, p_idempotency_expires_at);
    ELSE
      UPDATE idempotency_keys k
        SET request_fingerprint = p_fingerprint, task_id = p_task_id, expires_at = p_idempotency_expires_at
        WHERE k.account_id = p_account_id AND k.idempotency_key = p_idempotency_key;
    END IF;

    INSERT INTO ledger_entries (id, account_id, kind, amount_micros, task_id, created_at)
      VALUES ('entry_' || gen_random_uuid(), p_account_id, 'reserve', p_price_micros, p_task_id, p_created_at);

    IF p_api_key_id IS NOT NULL THEN
      UPDATE api_keys k SET usage_count = k.usage_count + 1 WHERE k.id = p_api_key_id;
    END IF;

    RETURN QUERY SELECT 'Admitted'::text, NULL::bigint, v_task;
  END
  $fn$`,

  // A grant, refund or adjustment with its effect on the cached figures and on payment
  // review. No row when the account does not exist; with an external reference already used
  // for this kind on this account, the first entry and the current figures.
  `CREATE FUNCTION taskmeter_credit(
    p_kind text,
    p_account_id text,
    p_amount_micros bigint,
    p_note text,
    p_external_ref text,
    p_at timestamptz
  ) RETURNS TABLE (
    entry ledger_entries,
    balance bigint,
    reserved bigint,
    review boolean
  )
  LANGUAGE plpgsql
  -- Rare, and its external-reference lookup has two indexes that fit: plan with the real values.
  SET plan_cache_mode = force_custom_plan
  AS $fn$
  DECLARE
    v_account accounts;
    v_entry ledger_entries;
    v_balance bigint;
    v_review boolean;
  BEGIN
    SELECT * INTO v_account FROM accounts a WHERE a.id = p_account_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
      RETURN;
    END IF;

    IF p_external_ref IS NOT NULL THEN
      SELECT * INTO v_entry FROM ledger_entries e
        WHERE e.account_id = p_account_id AND e.kind = p_kind AND e.external_ref = p_external_ref;
      IF FOUND THEN
        RETURN QUERY SELECT v_entry, v_account.balance_micros, v_account.reserved_micros, v_account.payment_review;
        RETURN;
      END IF;
    END IF;

    v_balance := CASE p_kind
      WHEN 'refund' THEN v_account.balance_micros - p_amount_micros
      ELSE v_account.balance_micros + p_amount_micros
    END;
    v_review := CASE p_kind
      WHEN 'refund' THEN v_account.payment_review OR v_balance < v_account.reserved_micros OR v_balance < 0
      WHEN 'grant' THEN v_account.payment_review AND (v_balance < v_account.reserved_micros OR v_balance < 0)
      ELSE v_account.payment_review
    END;

    UPDATE accounts a SET balance_micros = v_balance, payment_review = v_review WHERE a.id = p_account_id;

    INSERT INTO ledger_entries (id, account_id, kind, amount_micros, note, external_ref, created_at)
      VALUES ('entry_' || gen_random_uuid(), p_account_id, p_kind, p_amount_micros, p_note, p_external_ref, p_at)
      RETURNING * INTO v_entry;

    RETURN QUERY SELECT v_entry, v_balance, v_account.reserved_micros, v_review;
  END
  $fn$`,

  // Counts one request in the key's fixed one-minute window, restarting the window once
  // p_now reaches its end.
  `CREATE FUNCTION taskmeter_authenticate(p_hash text, p_now timestamptz)
  RETURNS TABLE (key api_keys, window_started timestamptz, window_requests integer)
  LANGUAGE plpgsql AS $fn$
  BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    RETURN QUERY
      UPDATE api_key_windows w SET
        window_start = CASE
          WHEN w.window_start IS NULL OR p_now >= w.window_start + interval '1 minute' THEN p_now
          ELSE w.window_start
        END,
        requests_in_window = CASE
          WHEN w.window_start IS NULL OR p_now >= w.window_start + interval '1 minute' THEN 1
          ELSE w.requests_in_window + 1
        END
        FROM api_keys k
        WHERE k.hash = p_hash AND w.api_key_id = k.id
        RETURNING k, w.window_start, w.requests_in_window;
  END
  $fn$`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
