/**
 * The submitting request's trace context written by the admission itself (`traceparent` in the
 * request JSON of `taskmeter_admit_requests`, a last argument of `taskmeter_admit`), so a task is
 * never visible to a worker without it. It was kept by a second statement after the admission
 * committed, and a worker that claimed the task in between started its span without the link.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `ALTER TYPE taskmeter_admission_request ADD ATTRIBUTE traceparent text`,
  `ALTER TYPE taskmeter_admission ADD ATTRIBUTE traceparent text`,
  `DROP FUNCTION taskmeter_admit(text, text, text, text, jsonb, bigint, bigint, integer, text, timestamptz, timestamptz,
    text, text, timestamptz, integer, integer, integer)`,
  `CREATE FUNCTION taskmeter_admit(p_task_id text, p_account_id text, p_api_key_id text, p_model text, p_input jsonb, p_price_micros bigint, p_unit_micros bigint, p_quantity integer, p_settlement text, p_created_at timestamp with time zone, p_deadline_at timestamp with time zone, p_idempotency_key text, p_fingerprint text, p_idempotency_expires_at timestamp with time zone, p_submissions_per_minute integer, p_max_unfinished_tasks integer, p_key_usage_limit integer, p_traceparent text) RETURNS TABLE(outcome text, detail bigint, task tasks)
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
      created_at, updated_at, deadline_at, traceparent
    ) VALUES (
      p_task_id, p_account_id, p_api_key_id, p_model, p_input, 'queued', p_price_micros, p_unit_micros,
      p_quantity, p_settlement, p_created_at, p_created_at, p_deadline_at, p_traceparent
    ) RETURNING * INTO v_task;

    -- The key read above is absent or expired, and under the account lock no other admission
    -- can change it; only a purge can, by deleting it: then this inserts it anew.
    INSERT INTO idempotency_keys (account_id, idempotency_key, request_fingerprint, task_id, expires_at)
      VALUES (p_account_id, p_idempotency_key, p_fingerprint, p_task_id, p_idempotency_expires_at)
      ON CONFLICT (account_id, idempotency_key) DO UPDATE
        SET request_fingerprint = excluded.request_fingerprint, task_id = excluded.task_id,
          expires_at = excluded.expires_at;

    INSERT INTO ledger_entries (id, account_id, kind, amount_micros, task_id, created_at)
      VALUES ('entry_' || taskmeter_uuidv7(), p_account_id, 'reserve', p_price_micros, p_task_id, p_created_at);

    IF p_api_key_id IS NOT NULL THEN
      UPDATE api_keys k SET usage_count = k.usage_count + 1 WHERE k.id = p_api_key_id;
    END IF;

    RETURN QUERY SELECT 'Admitted'::text, NULL::bigint, v_task;
  END
  $fn$`,
  `CREATE OR REPLACE FUNCTION taskmeter_admit_admissions(p_batch taskmeter_admission[]) RETURNS TABLE(ordinal integer, outcome text, detail bigint, task tasks)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_tasks tasks[];
    r record;
  BEGIN
    IF cardinality(p_batch) = 0 THEN
      RETURN;
    END IF;
    IF NOT EXISTS (
      SELECT 1 FROM unnest(p_batch) b GROUP BY b.account_id, b.idempotency_key HAVING count(*) > 1
    ) THEN
      BEGIN
        v_tasks := ARRAY(SELECT t FROM taskmeter_admit_all(p_batch) t);
      EXCEPTION WHEN SQLSTATE 'TM001' THEN
        v_tasks := NULL;
      END;
      IF v_tasks IS NOT NULL THEN
        RETURN QUERY SELECT b.ordinal, 'Admitted'::text, NULL::bigint, t
          FROM unnest(v_tasks) t JOIN unnest(p_batch) b ON b.task_id = t.id;
        RETURN;
      END IF;
    END IF;

    FOR r IN SELECT * FROM unnest(p_batch) b ORDER BY b.account_id COLLATE "C", b.ordinal LOOP
      RETURN QUERY SELECT r.ordinal, a.outcome, a.detail, a.task
        FROM taskmeter_admit(
          r.task_id, r.account_id, r.api_key_id, r.model, r.input, r.price_micros, r.unit_micros, r.quantity,
          r.settlement, r.created_at, r.deadline_at, r.idempotency_key, r.fingerprint, r.idempotency_expires_at,
          r.submissions_per_minute, r.max_unfinished_tasks, r.key_usage_limit, r.traceparent
        ) a;
    END LOOP;
  END
  $fn$`,
  `CREATE OR REPLACE FUNCTION taskmeter_admit_all(p_batch taskmeter_admission[]) RETURNS SETOF tasks
  LANGUAGE plpgsql AS $fn$
  DECLARE
    r record;
    v_tasks tasks[];
    v_account text;
    v_window_start timestamptz;
    v_in_window integer;
    v_unfinished integer;
    v_available bigint;
    v_accounts text[] := '{}';
    v_window_starts timestamptz[] := '{}';
    v_in_windows integer[] := '{}';
    v_inserted integer;
  BEGIN
    PERFORM 1 FROM accounts a
      WHERE a.id IN (SELECT b.account_id FROM unnest(p_batch) b)
      ORDER BY a.id COLLATE "C"
      FOR NO KEY UPDATE;

    WITH inserted AS (
      INSERT INTO tasks (
        id, account_id, api_key_id, model, input, status, price_micros, unit_micros, quantity, settlement,
        created_at, updated_at, deadline_at, traceparent
      )
      SELECT b.task_id, b.account_id, b.api_key_id, b.model, b.input, 'queued', b.price_micros, b.unit_micros,
          b.quantity, b.settlement, b.created_at, b.created_at, b.deadline_at, b.traceparent
        FROM unnest(p_batch) b
      ON CONFLICT DO NOTHING
      RETURNING *
    )
    SELECT array_agg(i) INTO v_tasks FROM inserted i;
    IF cardinality(v_tasks) IS DISTINCT FROM cardinality(p_batch) THEN
      -- A replay that names its first task's id.
      RAISE SQLSTATE 'TM001';
    END IF;

    INSERT INTO ledger_entries (id, account_id, kind, amount_micros, task_id, created_at)
      SELECT 'entry_' || taskmeter_uuidv7(), b.account_id, 'reserve', b.price_micros, b.task_id, b.created_at
        FROM unnest(p_batch) b;

    INSERT INTO idempotency_keys (account_id, idempotency_key, request_fingerprint, task_id, expires_at)
      SELECT b.account_id, b.idempotency_key, b.fingerprint, b.task_id, b.idempotency_expires_at
        FROM unnest(p_batch) b
      ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    IF v_inserted < cardinality(p_batch) THEN
      RAISE SQLSTATE 'TM001';
    END IF;

    FOR r IN
      SELECT b.account_id, b.created_at, b.price_micros, b.submissions_per_minute, b.max_unfinished_tasks,
          b.key_usage_limit, a.submissions_window_start, a.submissions_in_window, a.unfinished_tasks,
          a.payment_review, a.balance_micros - a.reserved_micros AS available, k.usage_count,
          row_number() OVER (PARTITION BY b.api_key_id ORDER BY b.ordinal) AS nth_of_key
        FROM unnest(p_batch) b
        JOIN accounts a ON a.id = b.account_id
        LEFT JOIN api_keys k ON k.id = b.api_key_id
        ORDER BY b.account_id COLLATE "C", b.ordinal
    LOOP
      IF v_account IS DISTINCT FROM r.account_id THEN
        IF v_account IS NOT NULL THEN
          v_accounts := v_accounts || v_account;
          v_window_starts := v_window_starts || v_window_start;
          v_in_windows := v_in_windows || v_in_window;
        END IF;
        v_account := r.account_id;
        v_window_start := r.submissions_window_start;
        v_in_window := r.submissions_in_window;
        v_unfinished := r.unfinished_tasks;
        v_available := r.available;
      END IF;
      IF r.key_usage_limit IS NOT NULL AND r.usage_count + r.nth_of_key - 1 >= r.key_usage_limit THEN
        RAISE SQLSTATE 'TM001';
      END IF;
      IF v_window_start IS NULL OR r.created_at >= v_window_start + interval '1 minute' THEN
        v_window_start := r.created_at;
        v_in_window := 0;
      END IF;
      IF v_in_window >= r.submissions_per_minute OR v_unfinished >= r.max_unfinished_tasks
         OR r.payment_review OR v_available < r.price_micros THEN
        RAISE SQLSTATE 'TM001';
      END IF;
      v_in_window := v_in_window + 1;
      v_unfinished := v_unfinished + 1;
      v_available := v_available - r.price_micros;
    END LOOP;
    v_accounts := v_accounts || v_account;
    v_window_starts := v_window_starts || v_window_start;
    v_in_windows := v_in_windows || v_in_window;

    UPDATE accounts a SET
      reserved_micros = a.reserved_micros + t.total,
      unfinished_tasks = a.unfinished_tasks + t.admitted,
      submissions_window_start = w.window_start,
      submissions_in_window = w.in_window
      FROM (SELECT b.account_id, sum(b.price_micros) AS total, count(*)::integer AS admitted
              FROM unnest(p_batch) b GROUP BY b.account_id) t,
           unnest(v_accounts, v_window_starts, v_in_windows) AS w(account_id, window_start, in_window)
      WHERE a.id = t.account_id AND w.account_id = t.account_id;

    UPDATE api_keys k SET usage_count = k.usage_count + t.admitted
      FROM (SELECT b.api_key_id, count(*)::integer AS admitted
              FROM unnest(p_batch) b WHERE b.api_key_id IS NOT NULL GROUP BY b.api_key_id) t
      WHERE k.id = t.api_key_id;

    RETURN QUERY SELECT * FROM unnest(v_tasks);
  END
  $fn$`,
  `CREATE OR REPLACE FUNCTION taskmeter_admit_requests(p_requests jsonb) RETURNS TABLE(ordinal integer, key api_keys, window_started timestamp with time zone, window_requests integer, outcome text, detail bigint, task tasks)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_requests taskmeter_admission_request[];
    v_keyed integer[];
    v_counts taskmeter_key_count[] := '{}';
    v_batch taskmeter_admission[];
  BEGIN
    v_requests := ARRAY(
      SELECT x FROM jsonb_populate_recordset(NULL::taskmeter_admission_request, p_requests) x ORDER BY x.ordinal
    );
    v_keyed := ARRAY(SELECT r.ordinal FROM unnest(v_requests) r WHERE r.key_hash IS NOT NULL ORDER BY r.ordinal);
    IF cardinality(v_keyed) > 0 THEN
      -- taskmeter_count_key_requests answers positions in the arrays it is given: v_keyed maps them back.
      v_counts := ARRAY(
        SELECT ROW(v_keyed[c.ordinal], c.key, c.window_started, c.window_requests)::taskmeter_key_count
          FROM taskmeter_count_key_requests(
            ARRAY(SELECT r.key_hash FROM unnest(v_requests) r WHERE r.key_hash IS NOT NULL ORDER BY r.ordinal),
            ARRAY(SELECT r.now FROM unnest(v_requests) r WHERE r.key_hash IS NOT NULL ORDER BY r.ordinal)
          ) c
      );
    END IF;
    v_batch := ARRAY(
      SELECT ROW(
          r.ordinal, r.task_id, (c.key).account_id, (c.key).id, r.model, r.input, r.price_micros, r.unit_micros,
          r.quantity, r.settlement, r.created_at, r.deadline_at, r.idempotency_key, r.fingerprint,
          r.idempotency_expires_at, r.submissions_per_minute, r.max_unfinished_tasks, (c.key).usage_limit, r.traceparent
        )::taskmeter_admission
        FROM unnest(v_requests) r
        JOIN unnest(v_counts) c ON c.ordinal = r.ordinal
        WHERE (c.key).revoked_at IS NULL
          AND c.window_requests <= coalesce((c.key).rate_limit_per_minute, r.default_rate_limit)
          AND r.scope = ANY ((c.key).scopes)
      UNION ALL
      SELECT ROW(
          r.ordinal, r.task_id, r.account_id, r.api_key_id, r.model, r.input, r.price_micros, r.unit_micros,
          r.quantity, r.settlement, r.created_at, r.deadline_at, r.idempotency_key, r.fingerprint,
          r.idempotency_expires_at, r.submissions_per_minute, r.max_unfinished_tasks, r.key_usage_limit, r.traceparent
        )::taskmeter_admission
        FROM unnest(v_requests) r
        WHERE r.key_hash IS NULL
    );
    RETURN QUERY
      WITH admitted AS MATERIALIZED (SELECT a.* FROM taskmeter_admit_admissions(v_batch) a)
      SELECT r.ordinal, c.key, c.window_started, c.window_requests, a.outcome, a.detail, a.task
        FROM unnest(v_requests) r
        LEFT JOIN unnest(v_counts) c ON c.ordinal = r.ordinal
        LEFT JOIN admitted a ON a.ordinal = r.ordinal
        WHERE c.ordinal IS NOT NULL OR a.ordinal IS NOT NULL;
  END
  $fn$`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
