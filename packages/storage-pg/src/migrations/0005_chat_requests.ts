/**
 * Chat requests: their records, the per-account chat rate window, and `open` and `settle` as one
 * transaction each. A settled request has a charge within its reservation and a completion time, an
 * open one neither; ledger entries naming a chat request point at one. Both lock the account row
 * first (opens never over-reserve); settle writes only while the request is open, so exactly one
 * concurrent settle writes.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE TABLE chat_requests (
    id text PRIMARY KEY,
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    account_id text NOT NULL REFERENCES accounts (id),
    api_key_id text REFERENCES api_keys (id),
    model text NOT NULL,
    status text NOT NULL CHECK (status IN ('open', 'succeeded', 'partial', 'failed')),
    reserved_micros bigint NOT NULL CHECK (reserved_micros >= 0),
    charged_micros bigint CHECK (charged_micros >= 0 AND charged_micros <= reserved_micros),
    prompt_tokens bigint CHECK (prompt_tokens >= 0),
    completion_tokens bigint CHECK (completion_tokens >= 0),
    finish_reason text,
    error_code text,
    -- The model's price tiers when the request was opened: the charge is computed from these.
    tiers jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    completed_at timestamptz,
    CHECK ((status = 'open') = (completed_at IS NULL)),
    CHECK ((status = 'open') = (charged_micros IS NULL)),
    CHECK ((prompt_tokens IS NULL) = (completion_tokens IS NULL))
  )`,
  `CREATE INDEX chat_requests_account_newest ON chat_requests (account_id, seq DESC)`,
  `CREATE INDEX chat_requests_open ON chat_requests (account_id, created_at) WHERE status = 'open'`,
  `ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_chat_request
    FOREIGN KEY (chat_request_id) REFERENCES chat_requests (id)`,
  `CREATE TABLE chat_rate_windows (
    account_id text PRIMARY KEY REFERENCES accounts (id),
    window_start timestamptz NOT NULL,
    requests integer NOT NULL CHECK (requests >= 0)
  )`,

  `CREATE FUNCTION taskmeter_chat_open(
    p_id text,
    p_account_id text,
    p_api_key_id text,
    p_model text,
    p_reserved_micros bigint,
    p_tiers jsonb,
    p_created_at timestamptz,
    p_requests_per_minute integer,
    p_max_open_requests integer,
    p_key_usage_limit integer
  ) RETURNS TABLE (outcome text, detail bigint, request chat_requests)
  LANGUAGE plpgsql AS $fn$
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
      VALUES ('entry_' || gen_random_uuid(), p_account_id, 'reserve', p_reserved_micros, p_id, p_created_at);

    IF p_api_key_id IS NOT NULL THEN
      UPDATE api_keys k SET usage_count = k.usage_count + 1 WHERE k.id = p_api_key_id;
    END IF;

    RETURN QUERY SELECT 'Opened'::text, NULL::bigint, v_request;
  END
  $fn$`,

  // Ends an open request: the charge, the released rest, the outcome. No row for an unknown
  // id; a request already settled comes back unchanged with written = false.
  `CREATE FUNCTION taskmeter_chat_settle(
    p_id text,
    p_status text,
    p_prompt_tokens bigint,
    p_completion_tokens bigint,
    p_finish_reason text,
    p_error_code text,
    p_charge_micros bigint,
    p_at timestamptz
  ) RETURNS TABLE (written boolean, request chat_requests)
  LANGUAGE plpgsql AS $fn$
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
        VALUES ('entry_' || gen_random_uuid(), v_account_id, 'charge', p_charge_micros, p_id, p_at);
    END IF;
    IF v_request.reserved_micros - p_charge_micros > 0 THEN
      INSERT INTO ledger_entries (id, account_id, kind, amount_micros, chat_request_id, created_at)
        VALUES ('entry_' || gen_random_uuid(), v_account_id, 'release', v_request.reserved_micros - p_charge_micros,
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
  $fn$`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
