/**
 * Chat credit leases: a block of an account's credit reserved by one process, which admits chat
 * requests against it in memory. A lease's reserve and release entries name it; each leased
 * request is recorded once, settled, with one charge entry taken from its lease while the lease is
 * open and holds it (else the charge stays uncharged: the operator's loss). Locks: the account row
 * first, then the lease, as every chat function does.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE TABLE chat_leases (
    id text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id),
    reserved_micros bigint NOT NULL CHECK (reserved_micros >= 0),
    charged_micros bigint NOT NULL DEFAULT 0 CHECK (charged_micros >= 0 AND charged_micros <= reserved_micros),
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    closed_at timestamptz
  )`,
  `CREATE INDEX chat_leases_expiring ON chat_leases (expires_at) WHERE closed_at IS NULL`,
  `ALTER TABLE ledger_entries ADD COLUMN chat_lease_id text REFERENCES chat_leases (id)`,
  `ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_check1`,
  `ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_check2`,
  `ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_one_subject
    CHECK (num_nonnulls(task_id, chat_request_id, chat_lease_id) <= 1)`,
  `ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_subject_of_reservations
    CHECK ((kind IN ('reserve', 'charge', 'release')) = (num_nonnulls(task_id, chat_request_id, chat_lease_id) = 1))`,
  `ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_lease_kinds
    CHECK (chat_lease_id IS NULL OR kind IN ('reserve', 'release'))`,
  `CREATE UNIQUE INDEX ledger_entries_lease_released_once ON ledger_entries (chat_lease_id)
    WHERE chat_lease_id IS NOT NULL AND kind = 'release'`,
  `ALTER TABLE chat_requests ADD COLUMN lease_id text REFERENCES chat_leases (id)`,
  // A charge its lease could no longer cover (closed by expiry): recorded, never taken.
  `ALTER TABLE chat_requests ADD COLUMN uncharged_micros bigint NOT NULL DEFAULT 0 CHECK (uncharged_micros >= 0)`,

  `CREATE FUNCTION taskmeter_chat_lease(
    p_id text,
    p_account_id text,
    p_need_micros bigint,
    p_want_micros bigint,
    p_at timestamptz,
    p_expires_at timestamptz
  ) RETURNS TABLE (outcome text, detail bigint)
  LANGUAGE plpgsql AS $fn$
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
        VALUES ('entry_' || gen_random_uuid(), p_account_id, 'reserve', v_granted, p_id, p_id, p_at);
    END IF;
    RETURN QUERY SELECT 'Leased'::text, v_granted;
  END
  $fn$`,

  // p_batch: a JSON array of settled requests. Those already recorded are skipped.
  `CREATE FUNCTION taskmeter_chat_settle_leased(p_batch jsonb) RETURNS void
  LANGUAGE plpgsql AS $fn$
  DECLARE
    r record;
    v_lease chat_leases;
    v_charge bigint;
    v_ids text[] := '{}';
  BEGIN
    PERFORM 1 FROM accounts a
      WHERE a.id IN (SELECT x.account_id FROM jsonb_to_recordset(p_batch) AS x (account_id text))
      ORDER BY a.id FOR NO KEY UPDATE;
    FOR r IN SELECT * FROM jsonb_to_recordset(p_batch) AS x (
        id text, lease_id text, account_id text, api_key_id text, model text, reserved_micros bigint,
        tiers jsonb, created_at timestamptz, status text, prompt_tokens bigint, completion_tokens bigint,
        finish_reason text, error_code text, charge_micros bigint, completed_at timestamptz
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
          uncharged_micros)
        VALUES (r.id, r.account_id, r.api_key_id, r.model, r.status, r.reserved_micros, v_charge,
          r.prompt_tokens, r.completion_tokens, r.finish_reason, r.error_code, r.tiers, r.created_at, r.completed_at,
          r.lease_id, r.charge_micros - v_charge);
      v_ids := v_ids || r.id;
    END LOOP;

    INSERT INTO ledger_entries (id, account_id, kind, amount_micros, chat_request_id, created_at)
      SELECT 'entry_' || gen_random_uuid(), c.account_id, 'charge', c.charged_micros, c.id, c.completed_at
        FROM chat_requests c WHERE c.id = ANY (v_ids) AND c.charged_micros > 0;
    UPDATE accounts a SET
        balance_micros = a.balance_micros - s.total,
        reserved_micros = a.reserved_micros - s.total
      FROM (SELECT c.account_id, sum(c.charged_micros) AS total FROM chat_requests c
        WHERE c.id = ANY (v_ids) GROUP BY c.account_id) s
      WHERE a.id = s.account_id AND s.total > 0;
    UPDATE api_keys k SET usage_count = k.usage_count + s.uses
      FROM (SELECT c.api_key_id, count(*) AS uses FROM chat_requests c
        WHERE c.id = ANY (v_ids) AND c.api_key_id IS NOT NULL GROUP BY c.api_key_id) s
      WHERE k.id = s.api_key_id;
  END
  $fn$`,

  // Closes the open leases among p_ids (only those expired before p_expired_before when given),
  // releasing what each did not charge; returns the ids closed.
  `CREATE FUNCTION taskmeter_chat_close_leases(p_ids text[], p_at timestamptz, p_expired_before timestamptz)
  RETURNS SETOF text
  LANGUAGE plpgsql AS $fn$
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
          VALUES ('entry_' || gen_random_uuid(), v_lease.account_id, 'release',
            v_lease.reserved_micros - v_lease.charged_micros, v_id, v_id, p_at);
      END IF;
      RETURN NEXT v_id;
    END LOOP;
  END
  $fn$`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
