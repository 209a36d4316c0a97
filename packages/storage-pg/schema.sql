-- The schema the migrations in src/migrations produce, dumped from a freshly migrated database.
-- Generated: do not edit; run `npm run schema:dump -w packages/storage-pg` after changing a migration.
CREATE TYPE taskmeter_admission AS (
	ordinal integer,
	task_id text,
	account_id text,
	api_key_id text,
	model text,
	input jsonb,
	price_micros bigint,
	unit_micros bigint,
	quantity integer,
	settlement text,
	created_at timestamp with time zone,
	deadline_at timestamp with time zone,
	idempotency_key text,
	fingerprint text,
	idempotency_expires_at timestamp with time zone,
	submissions_per_minute integer,
	max_unfinished_tasks integer,
	key_usage_limit integer,
	traceparent text
);

CREATE TYPE taskmeter_admission_request AS (
	ordinal integer,
	key_hash text,
	now timestamp with time zone,
	scope text,
	default_rate_limit integer,
	account_id text,
	api_key_id text,
	key_usage_limit integer,
	task_id text,
	model text,
	input jsonb,
	price_micros bigint,
	unit_micros bigint,
	quantity integer,
	settlement text,
	created_at timestamp with time zone,
	deadline_at timestamp with time zone,
	idempotency_key text,
	fingerprint text,
	idempotency_expires_at timestamp with time zone,
	submissions_per_minute integer,
	max_unfinished_tasks integer,
	traceparent text
);

CREATE TABLE api_keys (
    id text NOT NULL,
    seq bigint NOT NULL,
    account_id text NOT NULL,
    name text NOT NULL,
    display_prefix text NOT NULL,
    hash text NOT NULL,
    scopes text[] NOT NULL,
    created_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone,
    rate_limit_per_minute integer,
    usage_limit integer,
    usage_count integer DEFAULT 0 NOT NULL,
    CONSTRAINT api_keys_rate_limit_per_minute_check CHECK ((rate_limit_per_minute >= 0)),
    CONSTRAINT api_keys_usage_count_check CHECK ((usage_count >= 0)),
    CONSTRAINT api_keys_usage_limit_check CHECK ((usage_limit >= 0))
);

CREATE TYPE taskmeter_key_count AS (
	ordinal integer,
	key api_keys,
	window_started timestamp with time zone,
	window_requests integer
);

CREATE TABLE tasks (
    id text NOT NULL,
    seq bigint NOT NULL,
    account_id text NOT NULL,
    api_key_id text,
    model text NOT NULL,
    input jsonb NOT NULL,
    status text NOT NULL,
    error_code text,
    price_micros bigint NOT NULL,
    unit_micros bigint NOT NULL,
    quantity integer NOT NULL,
    settlement text NOT NULL,
    charged_micros bigint,
    assets jsonb DEFAULT '[]'::jsonb NOT NULL,
    upstream_ref text,
    attempts integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    deadline_at timestamp with time zone NOT NULL,
    lease_token text,
    lease_owner text,
    lease_expires_at timestamp with time zone,
    traceparent text,
    provider text,
    upstream_answer text,
    cancel_requested_at timestamp with time zone,
    progress smallint,
    CONSTRAINT tasks_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT tasks_check CHECK (((charged_micros >= 0) AND (charged_micros <= price_micros))),
    CONSTRAINT tasks_check1 CHECK (((status <> 'succeeded'::text) OR (charged_micros IS NOT NULL))),
    CONSTRAINT tasks_price_micros_check CHECK ((price_micros >= 0)),
    CONSTRAINT tasks_progress_check CHECK (((progress >= 0) AND (progress <= 100))),
    CONSTRAINT tasks_quantity_check CHECK ((quantity >= 0)),
    CONSTRAINT tasks_settlement_check CHECK ((settlement = ANY (ARRAY['fixed'::text, 'perDeliveredUnit'::text]))),
    CONSTRAINT tasks_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'submitting'::text, 'running'::text, 'succeeded'::text, 'failed'::text, 'reconciliation_required'::text]))),
    CONSTRAINT tasks_unit_micros_check CHECK ((unit_micros >= 0)),
    CONSTRAINT tasks_upstream_answer_check CHECK ((char_length(upstream_answer) <= 1000))
)
WITH (fillfactor='80');

CREATE FUNCTION taskmeter_admit(p_task_id text, p_account_id text, p_api_key_id text, p_model text, p_input jsonb, p_price_micros bigint, p_unit_micros bigint, p_quantity integer, p_settlement text, p_created_at timestamp with time zone, p_deadline_at timestamp with time zone, p_idempotency_key text, p_fingerprint text, p_idempotency_expires_at timestamp with time zone, p_submissions_per_minute integer, p_max_unfinished_tasks integer, p_key_usage_limit integer, p_traceparent text) RETURNS TABLE(outcome text, detail bigint, task tasks)
    LANGUAGE plpgsql
    AS $$
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
  $$;

CREATE FUNCTION taskmeter_admit_admissions(p_batch taskmeter_admission[]) RETURNS TABLE(ordinal integer, outcome text, detail bigint, task tasks)
    LANGUAGE plpgsql
    AS $$
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
  $$;

CREATE FUNCTION taskmeter_admit_all(p_batch taskmeter_admission[]) RETURNS SETOF tasks
    LANGUAGE plpgsql
    AS $$
  DECLARE
    r record;
    v_tasks tasks[];
    v_account accounts;
    v_window_start timestamptz;
    v_in_window integer;
    v_unfinished integer;
    v_available bigint;
    v_reserved bigint;
    v_admitted integer;
    v_usage integer;
    v_id text;
    v_uses integer;
    v_inserted integer;
  BEGIN
    -- Accounts in key order, each by its primary key: two batches wait for each other instead of deadlocking.
    FOR v_id IN SELECT DISTINCT b.account_id COLLATE "C" FROM unnest(p_batch) b ORDER BY 1 LOOP
      PERFORM 1 FROM accounts a WHERE a.id = v_id FOR NO KEY UPDATE;
    END LOOP;

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

    -- The rules, account by account, each account written once its admissions passed.
    FOR v_id IN SELECT DISTINCT b.account_id COLLATE "C" FROM unnest(p_batch) b ORDER BY 1 LOOP
      SELECT * INTO v_account FROM accounts a WHERE a.id = v_id;
      v_window_start := v_account.submissions_window_start;
      v_in_window := v_account.submissions_in_window;
      v_unfinished := v_account.unfinished_tasks;
      v_available := v_account.balance_micros - v_account.reserved_micros;
      v_reserved := 0;
      v_admitted := 0;
      FOR r IN
        SELECT b.api_key_id, b.created_at, b.price_micros, b.submissions_per_minute, b.max_unfinished_tasks,
            b.key_usage_limit, row_number() OVER (PARTITION BY b.api_key_id ORDER BY b.ordinal) AS nth_of_key
          FROM unnest(p_batch) b
          WHERE b.account_id = v_id
          ORDER BY b.ordinal
      LOOP
        IF r.key_usage_limit IS NOT NULL THEN
          SELECT k.usage_count INTO v_usage FROM api_keys k WHERE k.id = r.api_key_id;
          IF v_usage + r.nth_of_key - 1 >= r.key_usage_limit THEN
            RAISE SQLSTATE 'TM001';
          END IF;
        END IF;
        IF v_window_start IS NULL OR r.created_at >= v_window_start + interval '1 minute' THEN
          v_window_start := r.created_at;
          v_in_window := 0;
        END IF;
        IF v_in_window >= r.submissions_per_minute OR v_unfinished >= r.max_unfinished_tasks
           OR v_account.payment_review OR v_available < r.price_micros THEN
          RAISE SQLSTATE 'TM001';
        END IF;
        v_in_window := v_in_window + 1;
        v_unfinished := v_unfinished + 1;
        v_available := v_available - r.price_micros;
        v_reserved := v_reserved + r.price_micros;
        v_admitted := v_admitted + 1;
      END LOOP;
      UPDATE accounts a SET
        reserved_micros = a.reserved_micros + v_reserved,
        unfinished_tasks = a.unfinished_tasks + v_admitted,
        submissions_window_start = v_window_start,
        submissions_in_window = v_in_window
        WHERE a.id = v_id;
    END LOOP;

    -- Keys in key order; each belongs to an account locked above.
    FOR v_id, v_uses IN SELECT b.api_key_id COLLATE "C", count(*)::integer FROM unnest(p_batch) b
        WHERE b.api_key_id IS NOT NULL GROUP BY 1 ORDER BY 1 LOOP
      UPDATE api_keys k SET usage_count = k.usage_count + v_uses WHERE k.id = v_id;
    END LOOP;

    RETURN QUERY SELECT * FROM unnest(v_tasks);
  END
  $$;

CREATE FUNCTION taskmeter_admit_requests(p_requests jsonb) RETURNS TABLE(ordinal integer, key api_keys, window_started timestamp with time zone, window_requests integer, outcome text, detail bigint, task tasks)
    LANGUAGE plpgsql
    AS $$
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
  $$;

CREATE FUNCTION taskmeter_authenticate(p_hash text, p_now timestamp with time zone) RETURNS TABLE(key api_keys, window_started timestamp with time zone, window_requests integer)
    LANGUAGE plpgsql
    AS $$
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
  $$;

CREATE FUNCTION taskmeter_authenticate_batch(p_hashes text[], p_nows timestamp with time zone[]) RETURNS TABLE(ordinal integer, key api_keys, window_started timestamp with time zone, window_requests integer)
    LANGUAGE plpgsql
    AS $$
  BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    RETURN QUERY SELECT c.ordinal, c.key, c.window_started, c.window_requests
      FROM taskmeter_count_key_requests(p_hashes, p_nows) c;
  END
  $$;

CREATE FUNCTION taskmeter_chat_close_leases(p_ids text[], p_at timestamp with time zone, p_expired_before timestamp with time zone) RETURNS SETOF text
    LANGUAGE plpgsql
    AS $$
  DECLARE
    v_lease chat_leases;
    v_id text;
  BEGIN
    FOR v_id IN SELECT l.id FROM chat_leases l WHERE l.id = ANY (p_ids) ORDER BY l.account_id, l.id LOOP
      PERFORM 1 FROM accounts a WHERE a.id = (SELECT l.account_id FROM chat_leases l WHERE l.id = v_id)
        FOR NO KEY UPDATE;
      SELECT * INTO v_lease FROM chat_leases l WHERE l.id = v_id FOR UPDATE;
      CONTINUE WHEN v_lease.closed_at IS NOT NULL
        OR (p_expired_before IS NOT NULL AND v_lease.expires_at >= p_expired_before);
      UPDATE chat_leases l SET closed_at = p_at WHERE l.id = v_id;
      IF v_lease.reserved_micros > v_lease.charged_micros THEN
        UPDATE accounts a SET reserved_micros = a.reserved_micros - (v_lease.reserved_micros - v_lease.charged_micros)
          WHERE a.id = v_lease.account_id;
        INSERT INTO ledger_entries (id, account_id, kind, amount_micros, chat_lease_id, note, created_at)
          VALUES ('entry_' || taskmeter_uuidv7(), v_lease.account_id, 'release',
            v_lease.reserved_micros - v_lease.charged_micros, v_id, v_id, p_at);
      END IF;
      RETURN NEXT v_id;
    END LOOP;
  END
  $$;

CREATE FUNCTION taskmeter_chat_lease(p_id text, p_account_id text, p_need_micros bigint, p_want_micros bigint, p_at timestamp with time zone, p_expires_at timestamp with time zone) RETURNS TABLE(outcome text, detail bigint)
    LANGUAGE plpgsql
    AS $$
  DECLARE
    v_account accounts;
    v_lease chat_leases;
    v_granted bigint;
  BEGIN
    SELECT * INTO v_account FROM accounts a WHERE a.id = p_account_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
      RAISE foreign_key_violation USING MESSAGE = format('account %s does not exist', p_account_id);
    END IF;
    SELECT * INTO v_lease FROM chat_leases l WHERE l.id = p_id FOR UPDATE;
    IF FOUND AND v_lease.closed_at IS NOT NULL THEN
      RETURN QUERY SELECT 'LeaseClosed'::text, NULL::bigint;
      RETURN;
    END IF;
    IF v_account.payment_review THEN
      RETURN QUERY SELECT 'PaymentReviewRequired'::text, NULL::bigint;
      RETURN;
    END IF;
    IF v_account.balance_micros - v_account.reserved_micros < p_need_micros THEN
      RETURN QUERY SELECT 'InsufficientCredits'::text, v_account.balance_micros - v_account.reserved_micros;
      RETURN;
    END IF;
    v_granted := least(p_want_micros, v_account.balance_micros - v_account.reserved_micros);

    IF v_lease.id IS NULL THEN
      INSERT INTO chat_leases (id, account_id, reserved_micros, created_at, expires_at)
        VALUES (p_id, p_account_id, v_granted, p_at, p_expires_at);
    ELSE
      UPDATE chat_leases l SET reserved_micros = l.reserved_micros + v_granted, expires_at = p_expires_at
        WHERE l.id = p_id;
    END IF;
    IF v_granted > 0 THEN
      UPDATE accounts a SET reserved_micros = a.reserved_micros + v_granted WHERE a.id = p_account_id;
      INSERT INTO ledger_entries (id, account_id, kind, amount_micros, chat_lease_id, note, created_at)
        VALUES ('entry_' || taskmeter_uuidv7(), p_account_id, 'reserve', v_granted, p_id, p_id, p_at);
    END IF;
    RETURN QUERY SELECT 'Leased'::text, v_granted;
  END
  $$;

CREATE TABLE chat_requests (
    id text NOT NULL,
    seq bigint NOT NULL,
    account_id text NOT NULL,
    api_key_id text,
    model text NOT NULL,
    status text NOT NULL,
    reserved_micros bigint NOT NULL,
    charged_micros bigint,
    prompt_tokens bigint,
    completion_tokens bigint,
    finish_reason text,
    error_code text,
    tiers jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL,
    completed_at timestamp with time zone,
    lease_id text,
    uncharged_micros bigint DEFAULT 0 NOT NULL,
    upstream text,
    upstream_cost_micros bigint,
    shortfall_micros bigint DEFAULT 0 NOT NULL,
    CONSTRAINT chat_requests_check CHECK (((charged_micros >= 0) AND (charged_micros <= reserved_micros))),
    CONSTRAINT chat_requests_check1 CHECK (((status = 'open'::text) = (completed_at IS NULL))),
    CONSTRAINT chat_requests_check2 CHECK (((status = 'open'::text) = (charged_micros IS NULL))),
    CONSTRAINT chat_requests_check3 CHECK (((prompt_tokens IS NULL) = (completion_tokens IS NULL))),
    CONSTRAINT chat_requests_completion_tokens_check CHECK ((completion_tokens >= 0)),
    CONSTRAINT chat_requests_prompt_tokens_check CHECK ((prompt_tokens >= 0)),
    CONSTRAINT chat_requests_reserved_micros_check CHECK ((reserved_micros >= 0)),
    CONSTRAINT chat_requests_shortfall_micros_check CHECK ((shortfall_micros >= 0)),
    CONSTRAINT chat_requests_status_check CHECK ((status = ANY (ARRAY['open'::text, 'succeeded'::text, 'partial'::text, 'failed'::text]))),
    CONSTRAINT chat_requests_uncharged_micros_check CHECK ((uncharged_micros >= 0)),
    CONSTRAINT chat_requests_upstream_cost_micros_check CHECK ((upstream_cost_micros >= 0))
);

CREATE FUNCTION taskmeter_chat_open(p_id text, p_account_id text, p_api_key_id text, p_model text, p_reserved_micros bigint, p_tiers jsonb, p_created_at timestamp with time zone, p_requests_per_minute integer, p_max_open_requests integer, p_key_usage_limit integer) RETURNS TABLE(outcome text, detail bigint, request chat_requests)
    LANGUAGE plpgsql
    AS $$
  DECLARE
    v_account accounts;
    v_window chat_rate_windows;
    v_window_start timestamptz;
    v_in_window integer;
    v_request chat_requests;
  BEGIN
    SELECT * INTO v_account FROM accounts a WHERE a.id = p_account_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
      RAISE foreign_key_violation USING MESSAGE = format('account %s does not exist', p_account_id);
    END IF;

    IF p_api_key_id IS NOT NULL AND p_key_usage_limit IS NOT NULL
       AND (SELECT k.usage_count FROM api_keys k WHERE k.id = p_api_key_id) >= p_key_usage_limit THEN
      RETURN QUERY SELECT 'KeyUsageExceeded'::text, NULL::bigint, NULL::chat_requests;
      RETURN;
    END IF;

    SELECT * INTO v_window FROM chat_rate_windows w WHERE w.account_id = p_account_id;
    IF v_window.account_id IS NULL OR p_created_at >= v_window.window_start + interval '1 minute' THEN
      v_window_start := p_created_at;
      v_in_window := 0;
    ELSE
      v_window_start := v_window.window_start;
      v_in_window := v_window.requests;
    END IF;
    IF v_in_window >= p_requests_per_minute THEN
      RETURN QUERY SELECT 'RateLimited'::text,
        greatest(1, ceil(extract(epoch FROM v_window_start + interval '1 minute' - p_created_at)))::bigint,
        NULL::chat_requests;
      RETURN;
    END IF;

    IF (SELECT count(*) FROM chat_requests c WHERE c.account_id = p_account_id AND c.status = 'open')
       >= p_max_open_requests THEN
      RETURN QUERY SELECT 'ConcurrencyLimited'::text, NULL::bigint, NULL::chat_requests;
      RETURN;
    END IF;

    IF v_account.payment_review THEN
      RETURN QUERY SELECT 'PaymentReviewRequired'::text, NULL::bigint, NULL::chat_requests;
      RETURN;
    END IF;

    IF v_account.balance_micros - v_account.reserved_micros < p_reserved_micros THEN
      RETURN QUERY SELECT 'InsufficientCredits'::text,
        v_account.balance_micros - v_account.reserved_micros, NULL::chat_requests;
      RETURN;
    END IF;

    UPDATE accounts a SET reserved_micros = a.reserved_micros + p_reserved_micros WHERE a.id = p_account_id;

    INSERT INTO chat_rate_windows (account_id, window_start, requests)
      VALUES (p_account_id, v_window_start, v_in_window + 1)
      ON CONFLICT (account_id) DO UPDATE SET window_start = excluded.window_start, requests = excluded.requests;

    INSERT INTO chat_requests (id, account_id, api_key_id, model, status, reserved_micros, tiers, created_at)
      VALUES (p_id, p_account_id, p_api_key_id, p_model, 'open', p_reserved_micros, p_tiers, p_created_at)
      RETURNING * INTO v_request;

    INSERT INTO ledger_entries (id, account_id, kind, amount_micros, chat_request_id, created_at)
      VALUES ('entry_' || taskmeter_uuidv7(), p_account_id, 'reserve', p_reserved_micros, p_id, p_created_at);

    IF p_api_key_id IS NOT NULL THEN
      UPDATE api_keys k SET usage_count = k.usage_count + 1 WHERE k.id = p_api_key_id;
    END IF;

    RETURN QUERY SELECT 'Opened'::text, NULL::bigint, v_request;
  END
  $$;

CREATE FUNCTION taskmeter_chat_settle(p_id text, p_status text, p_prompt_tokens bigint, p_completion_tokens bigint, p_finish_reason text, p_error_code text, p_charge_micros bigint, p_at timestamp with time zone) RETURNS TABLE(written boolean, request chat_requests)
    LANGUAGE plpgsql
    AS $$
  DECLARE
    v_request chat_requests;
    v_account_id text;
  BEGIN
    SELECT c.account_id INTO v_account_id FROM chat_requests c WHERE c.id = p_id;
    IF NOT FOUND THEN
      RETURN;
    END IF;
    PERFORM 1 FROM accounts a WHERE a.id = v_account_id FOR NO KEY UPDATE;
    SELECT * INTO v_request FROM chat_requests c WHERE c.id = p_id FOR UPDATE;
    IF v_request.status <> 'open' THEN
      RETURN QUERY SELECT false, v_request;
      RETURN;
    END IF;
    IF p_charge_micros < 0 OR p_charge_micros > v_request.reserved_micros THEN
      RAISE check_violation USING MESSAGE =
        format('charge %s outside the reservation %s of %s', p_charge_micros, v_request.reserved_micros, p_id);
    END IF;

    UPDATE accounts a SET
      balance_micros = a.balance_micros - p_charge_micros,
      reserved_micros = a.reserved_micros - v_request.reserved_micros
      WHERE a.id = v_account_id;

    IF p_charge_micros > 0 THEN
      INSERT INTO ledger_entries (id, account_id, kind, amount_micros, chat_request_id, created_at)
        VALUES ('entry_' || taskmeter_uuidv7(), v_account_id, 'charge', p_charge_micros, p_id, p_at);
    END IF;
    IF v_request.reserved_micros - p_charge_micros > 0 THEN
      INSERT INTO ledger_entries (id, account_id, kind, amount_micros, chat_request_id, created_at)
        VALUES ('entry_' || taskmeter_uuidv7(), v_account_id, 'release', v_request.reserved_micros - p_charge_micros,
          p_id, p_at);
    END IF;

    UPDATE chat_requests c SET
      status = p_status,
      charged_micros = p_charge_micros,
      prompt_tokens = p_prompt_tokens,
      completion_tokens = p_completion_tokens,
      finish_reason = p_finish_reason,
      error_code = p_error_code,
      completed_at = p_at
      WHERE c.id = p_id
      RETURNING * INTO v_request;

    RETURN QUERY SELECT true, v_request;
  END
  $$;

CREATE FUNCTION taskmeter_chat_settle_leased(p_batch jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $$
  DECLARE
    r record;
    v_lease chat_leases;
    v_charge bigint;
    v_account text;
    v_total bigint;
    v_key text;
    v_uses bigint;
    v_ids text[] := '{}';
    v_accounts text[] := '{}';
    v_keys text[] := '{}';
    v_charges bigint[] := '{}';
    v_completed timestamptz[] := '{}';
  BEGIN
    -- Accounts in key order, each by its primary key: two batches wait for each other instead of deadlocking.
    FOR v_account IN SELECT DISTINCT x.account_id FROM jsonb_to_recordset(p_batch) AS x (account_id text) ORDER BY 1 LOOP
      PERFORM 1 FROM accounts a WHERE a.id = v_account FOR NO KEY UPDATE;
    END LOOP;
    FOR r IN SELECT * FROM jsonb_to_recordset(p_batch) AS x (
        id text, lease_id text, account_id text, api_key_id text, model text, reserved_micros bigint,
        tiers jsonb, created_at timestamptz, status text, prompt_tokens bigint, completion_tokens bigint,
        finish_reason text, error_code text, charge_micros bigint, completed_at timestamptz,
        upstream text, upstream_cost_micros bigint, shortfall_micros bigint
      ) ORDER BY x.lease_id, x.id
    LOOP
      CONTINUE WHEN EXISTS (SELECT 1 FROM chat_requests c WHERE c.id = r.id) OR r.id = ANY (v_ids);
      SELECT * INTO v_lease FROM chat_leases l WHERE l.id = r.lease_id FOR UPDATE;
      v_charge := CASE
        WHEN v_lease.closed_at IS NULL AND v_lease.reserved_micros - v_lease.charged_micros >= r.charge_micros
          THEN r.charge_micros
        ELSE 0 END;
      IF v_charge > 0 THEN
        UPDATE chat_leases l SET charged_micros = l.charged_micros + v_charge WHERE l.id = r.lease_id;
      END IF;
      INSERT INTO chat_requests (id, account_id, api_key_id, model, status, reserved_micros, charged_micros,
          prompt_tokens, completion_tokens, finish_reason, error_code, tiers, created_at, completed_at, lease_id,
          uncharged_micros, upstream, upstream_cost_micros, shortfall_micros)
        VALUES (r.id, r.account_id, r.api_key_id, r.model, r.status, r.reserved_micros, v_charge,
          r.prompt_tokens, r.completion_tokens, r.finish_reason, r.error_code, r.tiers, r.created_at, r.completed_at,
          r.lease_id, r.charge_micros - v_charge, r.upstream, r.upstream_cost_micros, coalesce(r.shortfall_micros, 0));
      v_ids := v_ids || r.id;
      v_accounts := v_accounts || r.account_id;
      v_keys := v_keys || r.api_key_id;
      v_charges := v_charges || v_charge;
      v_completed := v_completed || r.completed_at;
    END LOOP;

    INSERT INTO ledger_entries (id, account_id, kind, amount_micros, chat_request_id, created_at)
      SELECT 'entry_' || taskmeter_uuidv7(), s.account_id, 'charge', s.charge, s.id, s.completed_at
        FROM unnest(v_ids, v_accounts, v_charges, v_completed) AS s (id, account_id, charge, completed_at)
        WHERE s.charge > 0;
    -- Each account and key by its primary key, so no plan reads a whole table.
    FOR v_account, v_total IN SELECT x.account_id, sum(x.charge) FROM unnest(v_accounts, v_charges) AS x (account_id, charge)
        GROUP BY x.account_id ORDER BY 1 LOOP
      CONTINUE WHEN v_total = 0;
      UPDATE accounts a SET balance_micros = a.balance_micros - v_total, reserved_micros = a.reserved_micros - v_total
        WHERE a.id = v_account;
    END LOOP;
    FOR v_key, v_uses IN SELECT x.key_id, count(*) FROM unnest(v_keys) AS x (key_id)
        WHERE x.key_id IS NOT NULL GROUP BY x.key_id ORDER BY 1 LOOP
      UPDATE api_keys k SET usage_count = k.usage_count + v_uses WHERE k.id = v_key;
    END LOOP;
  END
  $$;

CREATE FUNCTION taskmeter_count_key_requests(p_hashes text[], p_nows timestamp with time zone[]) RETURNS SETOF taskmeter_key_count
    LANGUAGE plpgsql
    AS $$
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
  $$;

CREATE TABLE ledger_entries (
    id text NOT NULL,
    seq bigint NOT NULL,
    account_id text NOT NULL,
    kind text NOT NULL,
    amount_micros bigint NOT NULL,
    task_id text,
    chat_request_id text,
    note text,
    external_ref text,
    created_at timestamp with time zone NOT NULL,
    chat_lease_id text,
    CONSTRAINT ledger_entries_check CHECK (((kind = 'adjustment'::text) OR (amount_micros >= 0))),
    CONSTRAINT ledger_entries_kind_check CHECK ((kind = ANY (ARRAY['grant'::text, 'reserve'::text, 'charge'::text, 'release'::text, 'refund'::text, 'adjustment'::text]))),
    CONSTRAINT ledger_entries_lease_kinds CHECK (((chat_lease_id IS NULL) OR (kind = ANY (ARRAY['reserve'::text, 'release'::text])))),
    CONSTRAINT ledger_entries_one_subject CHECK ((num_nonnulls(task_id, chat_request_id, chat_lease_id) <= 1)),
    CONSTRAINT ledger_entries_subject_of_reservations CHECK (((kind = ANY (ARRAY['reserve'::text, 'charge'::text, 'release'::text])) = (num_nonnulls(task_id, chat_request_id, chat_lease_id) = 1)))
);

CREATE FUNCTION taskmeter_credit(p_kind text, p_account_id text, p_amount_micros bigint, p_note text, p_external_ref text, p_at timestamp with time zone) RETURNS TABLE(entry ledger_entries, balance bigint, reserved bigint, review boolean)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_custom_plan'
    AS $$
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
      VALUES ('entry_' || taskmeter_uuidv7(), p_account_id, p_kind, p_amount_micros, p_note, p_external_ref, p_at)
      RETURNING * INTO v_entry;

    RETURN QUERY SELECT v_entry, v_balance, v_account.reserved_micros, v_review;
  END
  $$;

CREATE FUNCTION taskmeter_payment_entry(p_kind text, p_account_id text, p_amount_micros bigint, p_note text, p_ref text, p_at timestamp with time zone, p_processor text, p_payment_id text, p_reason text) RETURNS text
    LANGUAGE plpgsql
    AS $$
  DECLARE
    v_entry_id text;
  BEGIN
    SELECT (c.entry).id INTO v_entry_id
      FROM taskmeter_credit(p_kind, p_account_id, p_amount_micros, p_note, p_processor || ':' || p_ref, p_at) c;
    INSERT INTO payment_entries (entry_id, processor, payment_id, reason)
      VALUES (v_entry_id, p_processor, p_payment_id, p_reason)
      ON CONFLICT DO NOTHING;
    RETURN v_entry_id;
  END
  $$;

CREATE TABLE payment_events (
    processor text NOT NULL,
    event_id text NOT NULL,
    payment_id text NOT NULL,
    event jsonb NOT NULL,
    seq bigint NOT NULL,
    received_at timestamp with time zone NOT NULL,
    applied_at timestamp with time zone,
    problem text,
    CONSTRAINT payment_events_check CHECK (((applied_at IS NULL) = (problem IS NOT NULL)))
);

CREATE FUNCTION taskmeter_payment_event(p_event jsonb, p_at timestamp with time zone) RETURNS SETOF payment_events
    LANGUAGE plpgsql
    AS $$
  DECLARE
    v_processor text := p_event->>'processor';
    v_payment_id text := p_event->>'paymentId';
    v_tag text := p_event->>'_tag';
    v_named text := (p_event->>'processor') || ' payment ' || (p_event->>'paymentId');
    v_kept payment_events;
    v_payment payments;
    v_dispute payment_disputes;
    v_amount bigint;
    v_problem text;
    v_entries text[] := ARRAY[]::text[];
    v_type text;
  BEGIN
    INSERT INTO payment_events (processor, event_id, payment_id, event, received_at, problem)
      VALUES (v_processor, p_event->>'eventId', v_payment_id, p_event, p_at, 'not applied yet')
      ON CONFLICT DO NOTHING;
    SELECT * INTO v_kept FROM payment_events e
      WHERE e.processor = v_processor AND e.event_id = p_event->>'eventId' FOR UPDATE;
    IF v_kept.applied_at IS NOT NULL THEN
      RETURN NEXT v_kept;
      RETURN;
    END IF;

    v_amount := CASE v_tag WHEN 'Refunded' THEN (v_kept.event->>'refundedMicros')::bigint
      ELSE (v_kept.event->>'amountMicros')::bigint END;
    IF v_tag <> 'PurchaseFailed' AND (v_amount IS NULL OR v_amount < CASE v_tag WHEN 'Refunded' THEN 0 ELSE 1 END) THEN
      v_problem := 'invalid amount ' || coalesce(v_amount::text, 'null');
    ELSIF v_tag = 'PurchaseCompleted' THEN
      IF NOT EXISTS (SELECT 1 FROM accounts a WHERE a.id = v_kept.event->>'accountId') THEN
        v_problem := 'no account ' || (v_kept.event->>'accountId');
      ELSE
        INSERT INTO payments (processor, payment_id, account_id, amount_micros, created_at)
          VALUES (v_processor, v_payment_id, v_kept.event->>'accountId', v_amount, p_at)
          ON CONFLICT DO NOTHING
          RETURNING * INTO v_payment;
        IF FOUND THEN
          v_entries := v_entries || taskmeter_payment_entry('grant', v_payment.account_id, v_amount, v_named || ': top-up',
            v_payment_id, p_at, v_processor, v_payment_id, 'purchase');
        END IF;
      END IF;
    ELSIF v_tag <> 'PurchaseFailed' THEN
      SELECT * INTO v_payment FROM payments p
        WHERE p.processor = v_processor AND p.payment_id = v_payment_id FOR UPDATE;
      IF NOT FOUND THEN
        v_problem := 'payment ' || v_payment_id || ' not applied yet';
      ELSIF v_tag = 'Refunded' THEN
        IF v_amount > v_payment.refunded_micros THEN
          UPDATE payments p SET refunded_micros = v_amount
            WHERE p.processor = v_processor AND p.payment_id = v_payment_id;
          v_entries := v_entries || taskmeter_payment_entry('refund', v_payment.account_id, v_amount - v_payment.refunded_micros,
            v_named || ': refund', v_payment_id || ':refunded:' || v_amount, p_at, v_processor, v_payment_id, 'refund');
        END IF;
      ELSIF v_tag = 'DisputeOpened' THEN
        INSERT INTO payment_disputes (processor, dispute_id, payment_id, amount_micros, status)
          VALUES (v_processor, v_kept.event->>'disputeId', v_payment_id, v_amount, 'open')
          ON CONFLICT DO NOTHING;
        IF FOUND THEN
          UPDATE payments p SET held_micros = p.held_micros + v_amount
            WHERE p.processor = v_processor AND p.payment_id = v_payment_id;
          v_entries := v_entries || taskmeter_payment_entry('adjustment', v_payment.account_id, -v_amount,
            v_named || ': dispute ' || (v_kept.event->>'disputeId') || ' opened, amount held',
            (v_kept.event->>'disputeId') || ':hold', p_at, v_processor, v_payment_id, 'hold');
        END IF;
      ELSE
        SELECT * INTO v_dispute FROM payment_disputes d
          WHERE d.processor = v_processor AND d.dispute_id = v_kept.event->>'disputeId' FOR UPDATE;
        IF NOT FOUND THEN
          v_problem := 'dispute ' || (v_kept.event->>'disputeId') || ' not opened yet';
        ELSIF v_dispute.status = 'open' THEN
          UPDATE payment_disputes d SET status = CASE v_tag WHEN 'DisputeLost' THEN 'lost' ELSE 'won' END
            WHERE d.processor = v_processor AND d.dispute_id = v_dispute.dispute_id;
          UPDATE payments p SET held_micros = p.held_micros - v_dispute.amount_micros
            WHERE p.processor = v_processor AND p.payment_id = v_payment_id;
          v_entries := v_entries || taskmeter_payment_entry('adjustment', v_payment.account_id, v_dispute.amount_micros,
            v_named || ': dispute ' || v_dispute.dispute_id || CASE v_tag WHEN 'DisputeLost' THEN ' lost' ELSE ' won' END
              || ', hold released',
            v_dispute.dispute_id || ':release', p_at, v_processor, v_payment_id, 'release');
          IF v_tag = 'DisputeLost' THEN
            v_entries := v_entries || taskmeter_payment_entry('refund', v_payment.account_id, v_dispute.amount_micros,
              v_named || ': dispute ' || v_dispute.dispute_id || ' lost',
              v_dispute.dispute_id || ':lost', p_at, v_processor, v_payment_id, 'dispute_lost');
          END IF;
        END IF;
      END IF;
    END IF;

    -- The payment webhook (kernel PaymentWebhook), only when the event changed the credits.
    IF v_problem IS NULL AND cardinality(v_entries) > 0 THEN
      SELECT * INTO v_payment FROM payments p WHERE p.processor = v_processor AND p.payment_id = v_payment_id;
      SELECT * INTO v_dispute FROM payment_disputes d
        WHERE d.processor = v_processor AND d.dispute_id = v_kept.event->>'disputeId';
      v_type := CASE v_tag WHEN 'PurchaseCompleted' THEN 'payment.succeeded' WHEN 'Refunded' THEN 'payment.refunded'
        WHEN 'DisputeOpened' THEN 'payment.disputed' ELSE 'payment.dispute_closed' END;
      INSERT INTO webhook_deliveries (id, account_id, endpoint_id, url, payment_id, event_type, payment, occurred_at,
        status, due_at, next_attempt_at, created_at)
      SELECT 'msg_' || gen_random_uuid(), e.account_id, e.id, e.url, v_payment_id, v_type,
        jsonb_build_object('id', v_payment_id, 'processor', v_processor, 'amountMicros', v_payment.amount_micros,
          'refundedMicros', v_payment.refunded_micros, 'heldMicros', v_payment.held_micros,
          'createdAt', v_payment.created_at,
          'dispute', CASE WHEN v_dispute.dispute_id IS NOT NULL THEN jsonb_build_object('id', v_dispute.dispute_id,
            'amountMicros', v_dispute.amount_micros, 'status', v_dispute.status) END,
          'ledgerEntryIds', to_jsonb(v_entries)),
        p_at, 'pending', p_at, p_at, p_at
      FROM webhook_endpoints e
      WHERE e.account_id = v_payment.account_id AND e.enabled AND v_type = ANY (e.events);
    END IF;

    UPDATE payment_events e
      SET applied_at = CASE WHEN v_problem IS NULL THEN p_at END, problem = v_problem
      WHERE e.processor = v_processor AND e.event_id = v_kept.event_id
      RETURNING * INTO v_kept;
    RETURN NEXT v_kept;
  END
  $$;

CREATE FUNCTION taskmeter_roll_spend() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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
  $$;

CREATE FUNCTION taskmeter_take_slots(p_task_id text, p_lease_token text, p_lanes text[], p_limits integer[], p_now timestamp with time zone) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
  DECLARE
    v_slots integer[] := '{}';
    v_slot integer;
  BEGIN
    PERFORM 1 FROM tasks t
      WHERE t.id = p_task_id AND t.lease_token = p_lease_token AND t.lease_expires_at > p_now;
    IF NOT FOUND THEN
      RETURN false;
    END IF;
    FOR i IN 1 .. coalesce(cardinality(p_lanes), 0) LOOP
      v_slot := NULL;
      -- A slot this lease already holds (a retried take) is kept.
      SELECT s.slot INTO v_slot FROM upstream_slots s
        WHERE s.lane = p_lanes[i] AND s.slot < p_limits[i] AND s.task_id = p_task_id AND s.lease_token = p_lease_token;
      FOR attempt IN 1 .. 2 LOOP
        EXIT WHEN v_slot IS NOT NULL;
        SELECT s.slot INTO v_slot FROM upstream_slots s
          WHERE s.lane = p_lanes[i] AND s.slot < p_limits[i]
            AND NOT EXISTS (
              SELECT 1 FROM tasks t
                WHERE t.id = s.task_id AND t.lease_token = s.lease_token AND t.lease_expires_at > p_now
            )
          ORDER BY s.slot
          LIMIT 1
          FOR UPDATE OF s SKIP LOCKED;
        -- Locked now: read again, as committed, whether another lease holds it.
        IF v_slot IS NOT NULL AND EXISTS (
          SELECT 1 FROM upstream_slots s JOIN tasks t ON t.id = s.task_id AND t.lease_token = s.lease_token
            WHERE s.lane = p_lanes[i] AND s.slot = v_slot AND t.lease_expires_at > p_now
        ) THEN
          RETURN false;
        END IF;
        EXIT WHEN v_slot IS NOT NULL OR attempt = 2;
        -- The lane's slots are made on first need (or after its limit was raised); a taker
        -- making them at the same time waits for the other's, then searches them again.
        INSERT INTO upstream_slots (lane, slot)
          SELECT p_lanes[i], n FROM generate_series(0, p_limits[i] - 1) n
          ON CONFLICT DO NOTHING;
      END LOOP;
      IF v_slot IS NULL THEN
        RETURN false;
      END IF;
      v_slots := v_slots || v_slot;
    END LOOP;
    UPDATE upstream_slots s SET task_id = p_task_id, lease_token = p_lease_token
      FROM unnest(p_lanes, v_slots) AS w(lane, slot)
      WHERE s.lane = w.lane AND s.slot = w.slot;
    RETURN true;
  END
  $$;

CREATE FUNCTION taskmeter_take_stream_slot(p_account_id text, p_limit integer, p_token text, p_lease interval) RETURNS integer
    LANGUAGE plpgsql
    AS $$
  DECLARE
    v_slot integer;
  BEGIN
    FOR attempt IN 1 .. 2 LOOP
      UPDATE stream_slots s SET token = p_token, expires_at = clock_timestamp() + p_lease
        WHERE s.account_id = p_account_id AND s.slot = (
          SELECT f.slot FROM stream_slots f
            WHERE f.account_id = p_account_id AND f.slot < p_limit
              AND (f.expires_at IS NULL OR f.expires_at <= clock_timestamp())
            ORDER BY f.slot
            LIMIT 1
            FOR UPDATE SKIP LOCKED
        )
        RETURNING s.slot INTO v_slot;
      -- The slots are made all at once, so the last one standing says they all do.
      EXIT WHEN v_slot IS NOT NULL OR attempt = 2 OR p_limit <= 0 OR EXISTS (
        SELECT 1 FROM stream_slots e WHERE e.account_id = p_account_id AND e.slot = p_limit - 1
      );
      -- A taker making them at the same time waits for the other's, then searches them again.
      INSERT INTO stream_slots (account_id, slot)
        SELECT p_account_id, n FROM generate_series(0, p_limit - 1) n
        ON CONFLICT DO NOTHING;
    END LOOP;
    RETURN v_slot;
  END
  $$;

CREATE FUNCTION taskmeter_uuidv7() RETURNS uuid
    LANGUAGE sql PARALLEL SAFE
    AS $$
  SELECT encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
        FROM 1 FOR 6),
      52, 1), 53, 1),
    'hex')::uuid
$$;

CREATE TABLE account_members (
    account_id text NOT NULL,
    user_id text NOT NULL,
    role text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT account_members_role_check CHECK ((role = ANY (ARRAY['owner'::text, 'member'::text])))
);

CREATE TABLE account_spend_days (
    account_id text NOT NULL,
    day date NOT NULL,
    model text NOT NULL,
    task_micros bigint NOT NULL,
    chat_micros bigint NOT NULL,
    CONSTRAINT account_spend_days_chat_micros_check CHECK ((chat_micros >= 0)),
    CONSTRAINT account_spend_days_task_micros_check CHECK ((task_micros >= 0))
);

COMMENT ON TABLE account_spend_days IS 'Serves GET /api/v1/usage/summary: the charge entries of an account per UTC day and model, kept by taskmeter_roll_spend.';

CREATE TABLE accounts (
    id text NOT NULL,
    seq bigint NOT NULL,
    name text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    balance_micros bigint DEFAULT 0 NOT NULL,
    reserved_micros bigint DEFAULT 0 NOT NULL,
    payment_review boolean DEFAULT false NOT NULL,
    unfinished_tasks integer DEFAULT 0 NOT NULL,
    submissions_window_start timestamp with time zone,
    submissions_in_window integer DEFAULT 0 NOT NULL,
    result_retention_days integer,
    CONSTRAINT accounts_reserved_micros_check CHECK ((reserved_micros >= 0)),
    CONSTRAINT accounts_result_retention_days_check CHECK ((result_retention_days >= 1)),
    CONSTRAINT accounts_submissions_in_window_check CHECK ((submissions_in_window >= 0)),
    CONSTRAINT accounts_unfinished_tasks_check CHECK ((unfinished_tasks >= 0))
);

ALTER TABLE accounts ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME accounts_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE api_key_windows (
    api_key_id text NOT NULL,
    window_start timestamp with time zone,
    requests_in_window integer DEFAULT 0 NOT NULL,
    CONSTRAINT api_key_windows_requests_in_window_check CHECK ((requests_in_window >= 0))
);

ALTER TABLE api_keys ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME api_keys_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE chat_leases (
    id text NOT NULL,
    account_id text NOT NULL,
    reserved_micros bigint NOT NULL,
    charged_micros bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    closed_at timestamp with time zone,
    CONSTRAINT chat_leases_check CHECK (((charged_micros >= 0) AND (charged_micros <= reserved_micros))),
    CONSTRAINT chat_leases_reserved_micros_check CHECK ((reserved_micros >= 0))
);

CREATE TABLE chat_price_lists (
    version bigint NOT NULL,
    list jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT chat_price_lists_version_check CHECK ((version >= 1))
);

CREATE TABLE chat_rate_windows (
    account_id text NOT NULL,
    window_start timestamp with time zone NOT NULL,
    requests integer NOT NULL,
    CONSTRAINT chat_rate_windows_requests_check CHECK ((requests >= 0))
);

ALTER TABLE chat_requests ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME chat_requests_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE chores (
    name text NOT NULL,
    holder text,
    lease_until timestamp with time zone,
    taken_at timestamp with time zone NOT NULL
);

CREATE TABLE email_tokens (
    hash text NOT NULL,
    purpose text NOT NULL,
    email text NOT NULL,
    user_id text,
    account_id text,
    role text,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    used_at timestamp with time zone,
    CONSTRAINT email_tokens_check CHECK ((expires_at > created_at)),
    CONSTRAINT email_tokens_check1 CHECK (((purpose = 'invitation'::text) = (user_id IS NULL))),
    CONSTRAINT email_tokens_check2 CHECK (((account_id IS NULL) = (role IS NULL))),
    CONSTRAINT email_tokens_hash_check CHECK ((hash ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT email_tokens_purpose_check CHECK ((purpose = ANY (ARRAY['verify-email'::text, 'password-reset'::text, 'invitation'::text]))),
    CONSTRAINT email_tokens_role_check CHECK ((role = ANY (ARRAY['owner'::text, 'member'::text])))
);

CREATE TABLE idempotency_keys (
    account_id text NOT NULL,
    idempotency_key text NOT NULL,
    request_fingerprint text NOT NULL,
    task_id text NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

ALTER TABLE ledger_entries ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME ledger_entries_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE media (
    reference text NOT NULL,
    account_id text NOT NULL,
    content_type text NOT NULL,
    size_bytes bigint NOT NULL,
    sha256 text NOT NULL,
    blob_key text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    data_removed boolean DEFAULT false NOT NULL,
    CONSTRAINT media_size_bytes_check CHECK ((size_bytes >= 0))
);

CREATE TABLE model_budget_days (
    model text NOT NULL,
    day date NOT NULL,
    admitted_micros bigint NOT NULL,
    CONSTRAINT model_budget_days_admitted_micros_check CHECK ((admitted_micros >= 0))
);

CREATE TABLE orphan_sweep_pending (
    result_id text NOT NULL
);

CREATE TABLE passkey_challenges (
    hash text NOT NULL,
    purpose text NOT NULL,
    user_id text,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    used_at timestamp with time zone,
    CONSTRAINT passkey_challenges_check CHECK ((expires_at > created_at)),
    CONSTRAINT passkey_challenges_check1 CHECK (((purpose = 'registration'::text) = (user_id IS NOT NULL))),
    CONSTRAINT passkey_challenges_hash_check CHECK ((hash ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT passkey_challenges_purpose_check CHECK ((purpose = ANY (ARRAY['registration'::text, 'authentication'::text])))
);

CREATE TABLE passkeys (
    credential_id text NOT NULL,
    user_id text NOT NULL,
    public_key bytea NOT NULL,
    counter bigint NOT NULL,
    transports text[] NOT NULL,
    created_at timestamp with time zone NOT NULL,
    last_used_at timestamp with time zone,
    name text DEFAULT 'Passkey'::text NOT NULL,
    CONSTRAINT passkeys_counter_check CHECK ((counter >= 0)),
    CONSTRAINT passkeys_credential_id_check CHECK ((credential_id ~ '^[A-Za-z0-9_-]+$'::text)),
    CONSTRAINT passkeys_name_check CHECK (((length(name) >= 1) AND (length(name) <= 64)))
);

CREATE TABLE payment_disputes (
    processor text NOT NULL,
    dispute_id text NOT NULL,
    payment_id text NOT NULL,
    amount_micros bigint NOT NULL,
    status text NOT NULL,
    CONSTRAINT payment_disputes_amount_micros_check CHECK ((amount_micros > 0)),
    CONSTRAINT payment_disputes_status_check CHECK ((status = ANY (ARRAY['open'::text, 'won'::text, 'lost'::text])))
);

CREATE TABLE payment_entries (
    entry_id text NOT NULL,
    processor text NOT NULL,
    payment_id text NOT NULL,
    reason text NOT NULL,
    CONSTRAINT payment_entries_reason_check CHECK ((reason = ANY (ARRAY['purchase'::text, 'refund'::text, 'hold'::text, 'release'::text, 'dispute_lost'::text])))
);

ALTER TABLE payment_events ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME payment_events_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE payments (
    processor text NOT NULL,
    payment_id text NOT NULL,
    account_id text NOT NULL,
    amount_micros bigint NOT NULL,
    refunded_micros bigint DEFAULT 0 NOT NULL,
    held_micros bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT payments_amount_micros_check CHECK ((amount_micros > 0)),
    CONSTRAINT payments_held_micros_check CHECK ((held_micros >= 0)),
    CONSTRAINT payments_refunded_micros_check CHECK ((refunded_micros >= 0))
);

CREATE TABLE price_lists (
    version bigint NOT NULL,
    list jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT price_lists_version_check CHECK ((version >= 1))
);

CREATE TABLE results (
    id text NOT NULL,
    account_id text NOT NULL,
    task_id text NOT NULL,
    content_type text NOT NULL,
    size_bytes bigint NOT NULL,
    sha256 text NOT NULL,
    blob_key text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    data_removed boolean DEFAULT false NOT NULL,
    CONSTRAINT results_size_bytes_check CHECK ((size_bytes >= 0))
);

CREATE TABLE sessions (
    hash text NOT NULL,
    user_id text NOT NULL,
    account_id text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT sessions_check CHECK ((expires_at > created_at)),
    CONSTRAINT sessions_hash_check CHECK ((hash ~ '^[0-9a-f]{64}$'::text))
);

CREATE TABLE sign_in_failures (
    key text NOT NULL,
    window_start timestamp with time zone NOT NULL,
    failures integer NOT NULL,
    CONSTRAINT sign_in_failures_failures_check CHECK ((failures > 0)),
    CONSTRAINT sign_in_failures_key_check CHECK (((length(key) >= 1) AND (length(key) <= 600)))
);

CREATE TABLE stream_slots (
    account_id text NOT NULL,
    slot integer NOT NULL,
    token text,
    expires_at timestamp with time zone,
    CONSTRAINT stream_slots_check CHECK (((token IS NULL) = (expires_at IS NULL))),
    CONSTRAINT stream_slots_slot_check CHECK ((slot >= 0))
);

CREATE TABLE sweep_marks (
    name text NOT NULL,
    created_at timestamp with time zone,
    id text
);

CREATE TABLE task_webhooks (
    task_id text NOT NULL,
    url text NOT NULL,
    events text[],
    CONSTRAINT task_webhooks_events_check CHECK ((events <@ ARRAY['task.running'::text, 'task.succeeded'::text, 'task.failed'::text, 'task.reconciliation_required'::text])),
    CONSTRAINT task_webhooks_url_check CHECK (((length(url) >= 1) AND (length(url) <= 2000)))
);

CREATE TABLE taskmeter_migrations (
    migration_id integer NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    name text NOT NULL
);

ALTER TABLE tasks ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME tasks_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE upstream_slots (
    lane text NOT NULL,
    slot integer NOT NULL,
    task_id text,
    lease_token text,
    CONSTRAINT upstream_slots_check CHECK (((task_id IS NULL) = (lease_token IS NULL))),
    CONSTRAINT upstream_slots_slot_check CHECK ((slot >= 0))
);

CREATE TABLE users (
    id text NOT NULL,
    email text NOT NULL,
    email_verified_at timestamp with time zone,
    password_hash text,
    operator boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT users_email_check CHECK (((email <> ''::text) AND (length(email) <= 254)))
);

CREATE TABLE webhook_attempts (
    delivery_id text NOT NULL,
    n bigint NOT NULL,
    at timestamp with time zone NOT NULL,
    status_code integer,
    latency_ms integer NOT NULL,
    response_excerpt text,
    error text,
    CONSTRAINT webhook_attempts_error_check CHECK ((length(error) <= 1000)),
    CONSTRAINT webhook_attempts_response_excerpt_check CHECK ((length(response_excerpt) <= 1024))
);

ALTER TABLE webhook_attempts ALTER COLUMN n ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME webhook_attempts_n_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE webhook_deliveries (
    id text NOT NULL,
    seq bigint NOT NULL,
    account_id text NOT NULL,
    endpoint_id text,
    url text NOT NULL,
    task_id text,
    event_type text NOT NULL,
    task jsonb,
    occurred_at timestamp with time zone NOT NULL,
    status text NOT NULL,
    due_at timestamp with time zone,
    next_attempt_at timestamp with time zone,
    lease_token text,
    round_attempts integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone,
    payment_id text,
    payment jsonb,
    CONSTRAINT webhook_deliveries_check CHECK (((status = 'pending'::text) = (due_at IS NOT NULL))),
    CONSTRAINT webhook_deliveries_event_type_check CHECK ((event_type = ANY (ARRAY['task.running'::text, 'task.succeeded'::text, 'task.failed'::text, 'task.reconciliation_required'::text, 'payment.succeeded'::text, 'payment.refunded'::text, 'payment.disputed'::text, 'payment.dispute_closed'::text]))),
    CONSTRAINT webhook_deliveries_finished_when_done CHECK (((status = 'pending'::text) = (finished_at IS NULL))),
    CONSTRAINT webhook_deliveries_one_subject CHECK ((((task_id IS NOT NULL) AND (task IS NOT NULL) AND (payment_id IS NULL) AND (payment IS NULL)) OR ((task_id IS NULL) AND (task IS NULL) AND (payment_id IS NOT NULL) AND (payment IS NOT NULL) AND (endpoint_id IS NOT NULL)))),
    CONSTRAINT webhook_deliveries_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'delivered'::text, 'failed'::text])))
);

ALTER TABLE webhook_deliveries ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME webhook_deliveries_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE webhook_endpoints (
    id text NOT NULL,
    account_id text NOT NULL,
    url text NOT NULL,
    events text[] NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    disabled_reason text,
    secret text NOT NULL,
    previous_secret text,
    previous_secret_expires_at timestamp with time zone,
    failing_since timestamp with time zone,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT webhook_endpoints_check CHECK (((previous_secret IS NULL) = (previous_secret_expires_at IS NULL))),
    CONSTRAINT webhook_endpoints_disabled_reason_check CHECK ((length(disabled_reason) <= 1000)),
    CONSTRAINT webhook_endpoints_events_check CHECK (((cardinality(events) > 0) AND (events <@ ARRAY['task.running'::text, 'task.succeeded'::text, 'task.failed'::text, 'task.reconciliation_required'::text, 'payment.succeeded'::text, 'payment.refunded'::text, 'payment.disputed'::text, 'payment.dispute_closed'::text]))),
    CONSTRAINT webhook_endpoints_id_check CHECK ((id ~~ 'whep\_%'::text)),
    CONSTRAINT webhook_endpoints_url_check CHECK (((length(url) >= 1) AND (length(url) <= 2000)))
);

CREATE TABLE webhook_signing_secrets (
    account_id text NOT NULL,
    secret text NOT NULL,
    created_at timestamp with time zone NOT NULL
);

ALTER TABLE ONLY account_members
    ADD CONSTRAINT account_members_pkey PRIMARY KEY (user_id, account_id);

ALTER TABLE ONLY account_spend_days
    ADD CONSTRAINT account_spend_days_pkey PRIMARY KEY (account_id, day, model);

ALTER TABLE ONLY accounts
    ADD CONSTRAINT accounts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY api_key_windows
    ADD CONSTRAINT api_key_windows_pkey PRIMARY KEY (api_key_id);

ALTER TABLE ONLY api_keys
    ADD CONSTRAINT api_keys_hash_key UNIQUE (hash);

ALTER TABLE ONLY api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);

ALTER TABLE ONLY chat_leases
    ADD CONSTRAINT chat_leases_pkey PRIMARY KEY (id);

ALTER TABLE ONLY chat_price_lists
    ADD CONSTRAINT chat_price_lists_pkey PRIMARY KEY (version);

ALTER TABLE ONLY chat_rate_windows
    ADD CONSTRAINT chat_rate_windows_pkey PRIMARY KEY (account_id);

ALTER TABLE ONLY chat_requests
    ADD CONSTRAINT chat_requests_pkey PRIMARY KEY (id);

ALTER TABLE ONLY chat_requests
    ADD CONSTRAINT chat_requests_seq_key UNIQUE (seq);

ALTER TABLE ONLY chores
    ADD CONSTRAINT chores_pkey PRIMARY KEY (name);

ALTER TABLE ONLY email_tokens
    ADD CONSTRAINT email_tokens_pkey PRIMARY KEY (hash);

ALTER TABLE ONLY idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (account_id, idempotency_key);

ALTER TABLE ONLY ledger_entries
    ADD CONSTRAINT ledger_entries_pkey PRIMARY KEY (id);

ALTER TABLE ONLY media
    ADD CONSTRAINT media_pkey PRIMARY KEY (reference);

ALTER TABLE ONLY model_budget_days
    ADD CONSTRAINT model_budget_days_pkey PRIMARY KEY (model, day);

ALTER TABLE ONLY orphan_sweep_pending
    ADD CONSTRAINT orphan_sweep_pending_pkey PRIMARY KEY (result_id);

ALTER TABLE ONLY passkey_challenges
    ADD CONSTRAINT passkey_challenges_pkey PRIMARY KEY (hash);

ALTER TABLE ONLY passkeys
    ADD CONSTRAINT passkeys_pkey PRIMARY KEY (credential_id);

ALTER TABLE ONLY payment_disputes
    ADD CONSTRAINT payment_disputes_pkey PRIMARY KEY (processor, dispute_id);

ALTER TABLE ONLY payment_entries
    ADD CONSTRAINT payment_entries_pkey PRIMARY KEY (entry_id);

ALTER TABLE ONLY payment_events
    ADD CONSTRAINT payment_events_pkey PRIMARY KEY (processor, event_id);

ALTER TABLE ONLY payments
    ADD CONSTRAINT payments_pkey PRIMARY KEY (processor, payment_id);

ALTER TABLE ONLY price_lists
    ADD CONSTRAINT price_lists_pkey PRIMARY KEY (version);

ALTER TABLE ONLY results
    ADD CONSTRAINT results_pkey PRIMARY KEY (id);

ALTER TABLE ONLY sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (hash);

ALTER TABLE ONLY sign_in_failures
    ADD CONSTRAINT sign_in_failures_pkey PRIMARY KEY (key);

ALTER TABLE ONLY stream_slots
    ADD CONSTRAINT stream_slots_pkey PRIMARY KEY (account_id, slot);

ALTER TABLE ONLY sweep_marks
    ADD CONSTRAINT sweep_marks_pkey PRIMARY KEY (name);

ALTER TABLE ONLY task_webhooks
    ADD CONSTRAINT task_webhooks_pkey PRIMARY KEY (task_id);

ALTER TABLE ONLY taskmeter_migrations
    ADD CONSTRAINT taskmeter_migrations_pkey PRIMARY KEY (migration_id);

ALTER TABLE ONLY tasks
    ADD CONSTRAINT tasks_pkey PRIMARY KEY (id);

ALTER TABLE tasks
    ADD CONSTRAINT tasks_traceparent_w3c CHECK ((traceparent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'::text)) NOT VALID;

ALTER TABLE ONLY upstream_slots
    ADD CONSTRAINT upstream_slots_pkey PRIMARY KEY (lane, slot);

ALTER TABLE ONLY users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

ALTER TABLE ONLY webhook_attempts
    ADD CONSTRAINT webhook_attempts_pkey PRIMARY KEY (delivery_id, n);

ALTER TABLE ONLY webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id);

ALTER TABLE ONLY webhook_endpoints
    ADD CONSTRAINT webhook_endpoints_pkey PRIMARY KEY (id);

ALTER TABLE ONLY webhook_signing_secrets
    ADD CONSTRAINT webhook_signing_secrets_pkey PRIMARY KEY (account_id);

CREATE INDEX account_members_account ON account_members USING btree (account_id);

CREATE INDEX api_keys_account ON api_keys USING btree (account_id, seq);

CREATE INDEX chat_leases_expiring ON chat_leases USING btree (expires_at) WHERE (closed_at IS NULL);

CREATE INDEX chat_requests_account_newest ON chat_requests USING btree (account_id, seq DESC);

CREATE INDEX chat_requests_created ON chat_requests USING btree (created_at);

CREATE INDEX chat_requests_open ON chat_requests USING btree (account_id, created_at) WHERE (status = 'open'::text);

CREATE INDEX idempotency_keys_expires_at ON idempotency_keys USING btree (expires_at);

COMMENT ON INDEX idempotency_keys_expires_at IS 'Serves housekeeping: purgeIdempotencyKeys, the oldest expired keys first.';

COMMENT ON INDEX idempotency_keys_pkey IS 'Serves admission: the exact (account, Idempotency-Key) lookup and upsert.';

CREATE INDEX ledger_entries_account_newest ON ledger_entries USING btree (hashtextextended(account_id, (0)::bigint), seq);

COMMENT ON INDEX ledger_entries_account_newest IS 'Serves GET /api/v1/usage: the account''s entries newest first (read backward); keyed by the account id''s hash, the id checked on the rows read.';

CREATE UNIQUE INDEX ledger_entries_external_ref ON ledger_entries USING btree (account_id, kind, external_ref) WHERE (external_ref IS NOT NULL);

COMMENT ON INDEX ledger_entries_external_ref IS 'Serves taskmeter_credit: one grant/refund/adjustment per external reference (payments, admin).';

CREATE UNIQUE INDEX ledger_entries_lease_released_once ON ledger_entries USING btree (chat_lease_id) WHERE ((chat_lease_id IS NOT NULL) AND (kind = 'release'::text));

COMMENT ON INDEX ledger_entries_lease_released_once IS 'Serves the books: at most one release per chat lease.';

CREATE UNIQUE INDEX ledger_entries_once_per_chat_request ON ledger_entries USING btree (chat_request_id, kind) WHERE ((chat_request_id IS NOT NULL) AND (kind = ANY (ARRAY['reserve'::text, 'charge'::text, 'release'::text])));

COMMENT ON INDEX ledger_entries_once_per_chat_request IS 'Serves the books: at most one reserve, one charge and one release per chat request.';

CREATE UNIQUE INDEX ledger_entries_once_per_task ON ledger_entries USING btree (task_id, kind) WHERE ((task_id IS NOT NULL) AND (kind = ANY (ARRAY['reserve'::text, 'charge'::text, 'release'::text])));

COMMENT ON INDEX ledger_entries_once_per_task IS 'Serves the books: at most one reserve, one charge and one release per task (insert-time check only).';

CREATE INDEX ledger_entries_period ON ledger_entries USING btree (created_at) WHERE (kind = ANY (ARRAY['charge'::text, 'release'::text, 'refund'::text]));

COMMENT ON INDEX ledger_entries_period IS 'Serves admin revenue: the charge, release and refund entries of a period, by time.';

COMMENT ON INDEX ledger_entries_pkey IS 'Serves GET /api/v1/usage?before=<entry id>: the page cursor; one row per entry id.';

CREATE INDEX media_expiring ON media USING btree (expires_at) WHERE (NOT data_removed);

CREATE INDEX passkeys_user ON passkeys USING btree (user_id);

CREATE INDEX payment_entries_payment ON payment_entries USING btree (processor, payment_id);

CREATE INDEX payment_events_newest ON payment_events USING btree (seq DESC);

CREATE INDEX payment_events_unapplied ON payment_events USING btree (processor, payment_id, seq) WHERE (applied_at IS NULL);

CREATE INDEX payments_account_newest ON payments USING btree (account_id, created_at DESC);

CREATE INDEX results_created ON results USING btree (created_at, id);

CREATE INDEX results_expiring ON results USING btree (expires_at) WHERE (NOT data_removed);

CREATE INDEX sessions_live_by_user ON sessions USING btree (user_id) WHERE (revoked_at IS NULL);

CREATE INDEX sign_in_failures_window_start ON sign_in_failures USING btree (window_start);

CREATE INDEX tasks_account_model_newest ON tasks USING btree (hashtextextended(account_id, (0)::bigint), model, created_at, seq);

COMMENT ON INDEX tasks_account_model_newest IS 'Serves GET /api/v1/jobs?model=: one range per account and model, newest first (read backward); keyed by the account id''s hash, the id checked on the rows read.';

CREATE INDEX tasks_account_newest ON tasks USING btree (hashtextextended(account_id, (0)::bigint), created_at, seq);

COMMENT ON INDEX tasks_account_newest IS 'Serves GET /api/v1/jobs: the account''s tasks newest first (read backward), its before= cursor, and ?status=succeeded (checked on the rows); keyed by the account id''s hash, the id checked on the rows read.';

CREATE INDEX tasks_account_status_newest ON tasks USING btree (hashtextextended(account_id, (0)::bigint), status, created_at, seq) WHERE (status = ANY (ARRAY['failed'::text, 'reconciliation_required'::text]));

COMMENT ON INDEX tasks_account_status_newest IS 'Serves GET /api/v1/jobs?status=failed|reconciliation_required: one range per account and status, newest first (read backward); keyed by the account id''s hash, the id checked on the rows read.';

CREATE INDEX tasks_awaiting_reconciliation ON tasks USING btree (id COLLATE "C") WHERE (status = 'reconciliation_required'::text);

COMMENT ON INDEX tasks_awaiting_reconciliation IS 'Serves the reconciliation pass and admin list of reconciliation_required tasks, by id.';

COMMENT ON INDEX tasks_pkey IS 'Serves GET /api/v1/jobs/{id} (poll), the worker''s writes to its task by id, a replayed Idempotency-Key''s task.';

CREATE INDEX tasks_unfinished ON tasks USING btree (created_at, seq) WHERE (status = ANY (ARRAY['queued'::text, 'submitting'::text, 'running'::text]));

COMMENT ON INDEX tasks_unfinished IS 'Serves the worker''s claim of the oldest claimable task, the backlog count of /readyz and /metrics, and GET /api/v1/jobs?status=queued|submitting|running (the backlog newest first, read backward; the account and status checked on the rows).';

CREATE UNIQUE INDEX users_email ON users USING btree (lower(email));

CREATE INDEX webhook_deliveries_due ON webhook_deliveries USING btree (due_at, seq) WHERE (status = 'pending'::text);

CREATE INDEX webhook_deliveries_endpoint_newest ON webhook_deliveries USING btree (endpoint_id, seq DESC);

CREATE INDEX webhook_deliveries_finished ON webhook_deliveries USING btree (finished_at) WHERE (finished_at IS NOT NULL);

COMMENT ON INDEX webhook_deliveries_finished IS 'Serves housekeeping: purgeFinished, the oldest finished deliveries first.';

CREATE INDEX webhook_deliveries_task_newest ON webhook_deliveries USING btree (task_id, seq DESC);

COMMENT ON INDEX webhook_deliveries_task_newest IS 'Serves GET /api/v1/jobs/{id}/webhook-deliveries: a task''s deliveries newest first.';

CREATE INDEX webhook_endpoints_account ON webhook_endpoints USING btree (account_id, created_at, id);

CREATE TRIGGER ledger_entries_roll_spend AFTER INSERT ON ledger_entries REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION taskmeter_roll_spend();

ALTER TABLE ONLY account_members
    ADD CONSTRAINT account_members_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY account_members
    ADD CONSTRAINT account_members_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id);

ALTER TABLE ONLY account_spend_days
    ADD CONSTRAINT account_spend_days_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY api_key_windows
    ADD CONSTRAINT api_key_windows_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES api_keys(id);

ALTER TABLE ONLY api_keys
    ADD CONSTRAINT api_keys_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY chat_leases
    ADD CONSTRAINT chat_leases_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY chat_rate_windows
    ADD CONSTRAINT chat_rate_windows_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY chat_requests
    ADD CONSTRAINT chat_requests_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY chat_requests
    ADD CONSTRAINT chat_requests_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES api_keys(id);

ALTER TABLE ONLY chat_requests
    ADD CONSTRAINT chat_requests_lease_id_fkey FOREIGN KEY (lease_id) REFERENCES chat_leases(id);

ALTER TABLE ONLY email_tokens
    ADD CONSTRAINT email_tokens_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY email_tokens
    ADD CONSTRAINT email_tokens_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id);

ALTER TABLE ONLY idempotency_keys
    ADD CONSTRAINT idempotency_keys_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY idempotency_keys
    ADD CONSTRAINT idempotency_keys_task_id_fkey FOREIGN KEY (task_id) REFERENCES tasks(id);

ALTER TABLE ONLY ledger_entries
    ADD CONSTRAINT ledger_entries_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY ledger_entries
    ADD CONSTRAINT ledger_entries_chat_lease_id_fkey FOREIGN KEY (chat_lease_id) REFERENCES chat_leases(id);

ALTER TABLE ONLY ledger_entries
    ADD CONSTRAINT ledger_entries_chat_request FOREIGN KEY (chat_request_id) REFERENCES chat_requests(id);

ALTER TABLE ONLY ledger_entries
    ADD CONSTRAINT ledger_entries_task_id_fkey FOREIGN KEY (task_id) REFERENCES tasks(id);

ALTER TABLE ONLY media
    ADD CONSTRAINT media_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY orphan_sweep_pending
    ADD CONSTRAINT orphan_sweep_pending_result_id_fkey FOREIGN KEY (result_id) REFERENCES results(id) ON DELETE CASCADE;

ALTER TABLE ONLY passkey_challenges
    ADD CONSTRAINT passkey_challenges_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id);

ALTER TABLE ONLY passkeys
    ADD CONSTRAINT passkeys_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id);

ALTER TABLE ONLY payment_disputes
    ADD CONSTRAINT payment_disputes_processor_payment_id_fkey FOREIGN KEY (processor, payment_id) REFERENCES payments(processor, payment_id);

ALTER TABLE ONLY payment_entries
    ADD CONSTRAINT payment_entries_entry_id_fkey FOREIGN KEY (entry_id) REFERENCES ledger_entries(id);

ALTER TABLE ONLY payment_entries
    ADD CONSTRAINT payment_entries_processor_payment_id_fkey FOREIGN KEY (processor, payment_id) REFERENCES payments(processor, payment_id);

ALTER TABLE ONLY payments
    ADD CONSTRAINT payments_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY results
    ADD CONSTRAINT results_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY results
    ADD CONSTRAINT results_task_id_fkey FOREIGN KEY (task_id) REFERENCES tasks(id);

ALTER TABLE ONLY sessions
    ADD CONSTRAINT sessions_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY sessions
    ADD CONSTRAINT sessions_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id);

ALTER TABLE ONLY stream_slots
    ADD CONSTRAINT stream_slots_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY tasks
    ADD CONSTRAINT tasks_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY tasks
    ADD CONSTRAINT tasks_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES api_keys(id);

ALTER TABLE ONLY webhook_attempts
    ADD CONSTRAINT webhook_attempts_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES webhook_deliveries(id) ON DELETE CASCADE;

ALTER TABLE ONLY webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES webhook_endpoints(id) ON DELETE CASCADE;

ALTER TABLE ONLY webhook_endpoints
    ADD CONSTRAINT webhook_endpoints_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);

ALTER TABLE ONLY webhook_signing_secrets
    ADD CONSTRAINT webhook_signing_secrets_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);
