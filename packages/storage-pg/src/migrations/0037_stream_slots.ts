/**
 * Event streams per account across processes (TaskStore.holdStream). `stream_slots` holds one row
 * per slot of an account, made on first need (or when the limit is raised); a slot is held while
 * its lease, on the database's clock, has not run out. The process that holds it renews the lease
 * while its stream is open and frees it when the stream ends, so a crashed process's slots lapse.
 * `taskmeter_take_stream_slot` takes one free slot below the limit (its number) or none (null).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE TABLE stream_slots (
    account_id text NOT NULL REFERENCES accounts (id),
    slot integer NOT NULL CHECK (slot >= 0),
    token text,
    expires_at timestamptz,
    PRIMARY KEY (account_id, slot),
    CHECK ((token IS NULL) = (expires_at IS NULL))
  )`,

  // Reads at most the account's first p_limit slots, by primary key. SKIP LOCKED: a slot another
  // taker (or a release) is deciding on counts as taken, so takers never wait for each other and
  // the limit holds; a taker may then answer null while a slot is being freed.
  `CREATE FUNCTION taskmeter_take_stream_slot(
    p_account_id text, p_limit integer, p_token text, p_lease interval
  ) RETURNS integer
  LANGUAGE plpgsql AS $fn$
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
  $fn$`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
