/**
 * The shortfall of a chat request: what its reported usage cost beyond its reservation, which is
 * not charged (0 when the usage fit). Written with its settlement on both paths; the margin
 * report sums it. Adding the column with a constant default rewrites no rows.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `ALTER TABLE chat_requests ADD COLUMN shortfall_micros bigint NOT NULL DEFAULT 0 CHECK (shortfall_micros >= 0)`,

  // As 0020's, with the shortfall.
  `CREATE OR REPLACE FUNCTION taskmeter_chat_settle_leased(p_batch jsonb) RETURNS void
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
  $fn$`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
