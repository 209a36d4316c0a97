/**
 * `taskmeter_admit_all` locks, reads and updates a batch's accounts and keys one by one by primary
 * key, instead of joining the batch to `accounts` and `api_keys` (the lock's `IN (SELECT ...
 * unnest(p_batch))`, the rules' loop, the two `UPDATE ... FROM`): under the plans PL/pgSQL keeps
 * from a new deployment's nearly empty tables those joins scanned every account and key, per batch
 * (docs/decisions.md, Storage). What it admits and refuses is unchanged.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE OR REPLACE FUNCTION taskmeter_admit_all(p_batch taskmeter_admission[]) RETURNS SETOF tasks
  LANGUAGE plpgsql AS $fn$
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
  $fn$`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
