/**
 * Authentication inside admission (TaskStore.admitWithKey): `taskmeter_admit_keyed_batch` counts each
 * request in its key's window (`taskmeter_count_key_requests`, with a durable commit) and admits,
 * through `taskmeter_admit_admissions`, those whose key passes KeyCheck.refusal, in one statement and
 * transaction. Locks: the key's window row, then accounts in id order, then key rows, an order no
 * other transaction reverses.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE TYPE taskmeter_key_count AS (
    ordinal integer, key api_keys, window_started timestamptz, window_requests integer
  )`,

  `CREATE FUNCTION taskmeter_count_key_requests(p_hashes text[], p_nows timestamptz[])
  RETURNS SETOF taskmeter_key_count
  LANGUAGE plpgsql AS $fn$
  DECLARE
    g record;
    v_key api_keys;
    v_start timestamptz;
    v_count integer;
    v_row taskmeter_key_count;
  BEGIN
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
        v_row := ROW(g.ordinals[i], v_key, v_start, v_count);
        RETURN NEXT v_row;
      END LOOP;
      UPDATE api_key_windows w SET window_start = v_start, requests_in_window = v_count
        WHERE w.api_key_id = v_key.id;
    END LOOP;
  END
  $fn$`,

  `CREATE OR REPLACE FUNCTION taskmeter_authenticate_batch(p_hashes text[], p_nows timestamptz[])
  RETURNS TABLE (ordinal integer, key api_keys, window_started timestamptz, window_requests integer)
  LANGUAGE plpgsql AS $fn$
  BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    RETURN QUERY SELECT c.ordinal, c.key, c.window_started, c.window_requests
      FROM taskmeter_count_key_requests(p_hashes, p_nows) c;
  END
  $fn$`,

  `CREATE FUNCTION taskmeter_admit_admissions(p_batch taskmeter_admission[])
  RETURNS TABLE (ordinal integer, outcome text, detail bigint, task tasks)
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
          r.submissions_per_minute, r.max_unfinished_tasks, r.key_usage_limit
        ) a;
    END LOOP;
  END
  $fn$`,

  `CREATE OR REPLACE FUNCTION taskmeter_admit_batch(p_admissions jsonb)
  RETURNS TABLE (ordinal integer, outcome text, detail bigint, task tasks)
  LANGUAGE sql AS $fn$
    SELECT a.* FROM taskmeter_admit_admissions(
      ARRAY(SELECT x FROM jsonb_populate_recordset(NULL::taskmeter_admission, p_admissions) x)
    ) a
  $fn$`,

  `CREATE TYPE taskmeter_keyed_admission AS (
    ordinal integer, key_hash text, now timestamptz, scope text, default_rate_limit integer,
    task_id text, model text, input jsonb, price_micros bigint, unit_micros bigint, quantity integer,
    settlement text, created_at timestamptz, deadline_at timestamptz, idempotency_key text, fingerprint text,
    idempotency_expires_at timestamptz, submissions_per_minute integer, max_unfinished_tasks integer
  )`,

  // Ordinals are the requests' 1-based positions in p_requests; an unknown key has no row.
  `CREATE FUNCTION taskmeter_admit_keyed_batch(p_requests jsonb)
  RETURNS TABLE (
    ordinal integer, key api_keys, window_started timestamptz, window_requests integer,
    outcome text, detail bigint, task tasks
  )
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_requests taskmeter_keyed_admission[];
    v_counts taskmeter_key_count[];
    v_batch taskmeter_admission[];
  BEGIN
    v_requests := ARRAY(
      SELECT x FROM jsonb_populate_recordset(NULL::taskmeter_keyed_admission, p_requests) x ORDER BY x.ordinal
    );
    v_counts := ARRAY(
      SELECT c FROM taskmeter_count_key_requests(
        ARRAY(SELECT r.key_hash FROM unnest(v_requests) r),
        ARRAY(SELECT r.now FROM unnest(v_requests) r)
      ) c
    );
    v_batch := ARRAY(
      SELECT ROW(
          r.ordinal, r.task_id, (c.key).account_id, (c.key).id, r.model, r.input, r.price_micros, r.unit_micros,
          r.quantity, r.settlement, r.created_at, r.deadline_at, r.idempotency_key, r.fingerprint,
          r.idempotency_expires_at, r.submissions_per_minute, r.max_unfinished_tasks, (c.key).usage_limit
        )::taskmeter_admission
        FROM unnest(v_requests) r
        JOIN unnest(v_counts) c ON c.ordinal = r.ordinal
        WHERE (c.key).revoked_at IS NULL
          AND c.window_requests <= coalesce((c.key).rate_limit_per_minute, r.default_rate_limit)
          AND r.scope = ANY ((c.key).scopes)
    );
    RETURN QUERY
      WITH admitted AS MATERIALIZED (SELECT a.* FROM taskmeter_admit_admissions(v_batch) a)
      SELECT c.ordinal, c.key, c.window_started, c.window_requests, a.outcome, a.detail, a.task
        FROM unnest(v_counts) c LEFT JOIN admitted a ON a.ordinal = c.ordinal;
  END
  $fn$`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
