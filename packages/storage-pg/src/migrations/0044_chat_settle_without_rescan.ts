/**
 * `taskmeter_chat_settle_leased` writes a batch's ledger entries, balances and key uses from what
 * its loop already holds, not by reading the batch's rows back out of `chat_requests` (`c.id = ANY
 * (v_ids)`), and locks and updates accounts and keys one by one by primary key. The read-back ran
 * on the plan PL/pgSQL kept from a new deployment's empty table, a sequential scan that grew with
 * every stored chat request (docs/decisions.md, Storage; figures in bench/RESULTS.md, Chat).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE OR REPLACE FUNCTION taskmeter_chat_settle_leased(p_batch jsonb) RETURNS void
  LANGUAGE plpgsql AS $fn$
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
  $fn$`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
