/**
 * Bulk admission: `taskmeter_admit_batch` first tries `taskmeter_admit_all`, which locks the batch's
 * accounts in id order, inserts the tasks, reserve entries and Idempotency-Keys in one statement
 * each, walks the admissions with `taskmeter_admit`'s rules, and moves each account's figures and
 * key's count once; anything else rolls back to admission by admission. `taskmeter_authenticate_batch`
 * updates each key's window once per batch. Why the lock comes first: docs/decisions.md, Storage.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE TYPE taskmeter_admission AS (
    ordinal integer, task_id text, account_id text, api_key_id text, model text, input jsonb,
    price_micros bigint, unit_micros bigint, quantity integer, settlement text, created_at timestamptz,
    deadline_at timestamptz, idempotency_key text, fingerprint text, idempotency_expires_at timestamptz,
    submissions_per_minute integer, max_unfinished_tasks integer, key_usage_limit integer
  )`,

  // Admits the whole batch or raises 'TM001' (not all of it would be admitted); the caller
  // rolls back to before the call.
  `CREATE FUNCTION taskmeter_admit_all(p_batch taskmeter_admission[])
  RETURNS SETOF tasks
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
        created_at, updated_at, deadline_at
      )
      SELECT b.task_id, b.account_id, b.api_key_id, b.model, b.input, 'queued', b.price_micros, b.unit_micros,
          b.quantity, b.settlement, b.created_at, b.created_at, b.deadline_at
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
      SELECT 'entry_' || gen_random_uuid(), b.account_id, 'reserve', b.price_micros, b.task_id, b.created_at
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

  `CREATE OR REPLACE FUNCTION taskmeter_admit_batch(p_admissions jsonb)
  RETURNS TABLE (ordinal integer, outcome text, detail bigint, task tasks)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_batch taskmeter_admission[];
    v_tasks tasks[];
    r record;
  BEGIN
    v_batch := ARRAY(SELECT x FROM jsonb_populate_recordset(NULL::taskmeter_admission, p_admissions) x);
    IF NOT EXISTS (
      SELECT 1 FROM unnest(v_batch) b GROUP BY b.account_id, b.idempotency_key HAVING count(*) > 1
    ) THEN
      BEGIN
        v_tasks := ARRAY(SELECT t FROM taskmeter_admit_all(v_batch) t);
      EXCEPTION WHEN SQLSTATE 'TM001' THEN
        v_tasks := NULL;
      END;
      IF v_tasks IS NOT NULL THEN
        RETURN QUERY SELECT b.ordinal, 'Admitted'::text, NULL::bigint, t
          FROM unnest(v_tasks) t JOIN unnest(v_batch) b ON b.task_id = t.id;
        RETURN;
      END IF;
    END IF;

    FOR r IN SELECT * FROM unnest(v_batch) b ORDER BY b.account_id COLLATE "C", b.ordinal LOOP
      RETURN QUERY SELECT r.ordinal, a.outcome, a.detail, a.task
        FROM taskmeter_admit(
          r.task_id, r.account_id, r.api_key_id, r.model, r.input, r.price_micros, r.unit_micros, r.quantity,
          r.settlement, r.created_at, r.deadline_at, r.idempotency_key, r.fingerprint, r.idempotency_expires_at,
          r.submissions_per_minute, r.max_unfinished_tasks, r.key_usage_limit
        ) a;
    END LOOP;
  END
  $fn$`,

  `CREATE OR REPLACE FUNCTION taskmeter_authenticate_batch(p_hashes text[], p_nows timestamptz[])
  RETURNS TABLE (ordinal integer, key api_keys, window_started timestamptz, window_requests integer)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    g record;
    v_key api_keys;
    v_start timestamptz;
    v_count integer;
  BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    FOR g IN
      SELECT x.hash, array_agg(x.now ORDER BY x.ordinal) AS nows, array_agg(x.ordinal::integer ORDER BY x.ordinal) AS ordinals
        FROM unnest(p_hashes, p_nows) WITH ORDINALITY AS x(hash, now, ordinal)
        GROUP BY x.hash
        ORDER BY x.hash COLLATE "C"
    LOOP
      SELECT k.* INTO v_key FROM api_keys k WHERE k.hash = g.hash;
      CONTINUE WHEN NOT FOUND;
      SELECT w.window_start, w.requests_in_window INTO v_start, v_count
        FROM api_key_windows w WHERE w.api_key_id = v_key.id FOR UPDATE;
      CONTINUE WHEN NOT FOUND;
      FOR i IN 1 .. cardinality(g.nows) LOOP
        IF v_start IS NULL OR g.nows[i] >= v_start + interval '1 minute' THEN
          v_start := g.nows[i];
          v_count := 1;
        ELSE
          v_count := v_count + 1;
        END IF;
        ordinal := g.ordinals[i];
        key := v_key;
        window_started := v_start;
        window_requests := v_count;
        RETURN NEXT;
      END LOOP;
      UPDATE api_key_windows w SET window_start = v_start, requests_in_window = v_count
        WHERE w.api_key_id = v_key.id;
    END LOOP;
  END
  $fn$`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
