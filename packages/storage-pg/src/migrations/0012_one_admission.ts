/**
 * One admission function: `taskmeter_admit_requests` admits a batch of requests of callers (the
 * account, key id and usage limit given) and of presented keys (counted and checked as
 * `taskmeter_admit_keyed_batch` did), in one statement, through `taskmeter_admit_admissions`.
 * It replaces `taskmeter_admit_batch` and `taskmeter_admit_keyed_batch`, which are dropped.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `DROP FUNCTION taskmeter_admit_batch(jsonb)`,
  `DROP FUNCTION taskmeter_admit_keyed_batch(jsonb)`,
  `DROP TYPE taskmeter_keyed_admission`,

  // A caller's request has account_id (api_key_id, key_usage_limit); a key's has key_hash, now,
  // scope and default_rate_limit instead.
  `CREATE TYPE taskmeter_admission_request AS (
    ordinal integer, key_hash text, now timestamptz, scope text, default_rate_limit integer,
    account_id text, api_key_id text, key_usage_limit integer,
    task_id text, model text, input jsonb, price_micros bigint, unit_micros bigint, quantity integer,
    settlement text, created_at timestamptz, deadline_at timestamptz, idempotency_key text, fingerprint text,
    idempotency_expires_at timestamptz, submissions_per_minute integer, max_unfinished_tasks integer
  )`,

  // One row per request by its ordinal, but none for a key's request whose hash is unknown; the
  // key columns are set for a key's request, the admission's for an admission that was judged.
  `CREATE FUNCTION taskmeter_admit_requests(p_requests jsonb)
  RETURNS TABLE (
    ordinal integer, key api_keys, window_started timestamptz, window_requests integer,
    outcome text, detail bigint, task tasks
  )
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
          r.idempotency_expires_at, r.submissions_per_minute, r.max_unfinished_tasks, (c.key).usage_limit
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
          r.idempotency_expires_at, r.submissions_per_minute, r.max_unfinished_tasks, r.key_usage_limit
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
