/**
 * `taskmeter_take_slots` checks a slot again once it holds its lock. Under READ COMMITTED the search
 * (`FOR UPDATE SKIP LOCKED` with a NOT EXISTS on the holder's lease) could lock a slot that another
 * taker took and committed after the search's snapshot: PostgreSQL rechecks the locked row's new
 * version, but an anti-join's other side is not read again in that recheck, so the taken slot
 * passed, and a lane held more than its limit (the conformance case "concurrent takes never exceed
 * the limit" saw 4 of 3). The check is a statement of its own, which sees the latest version.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE OR REPLACE FUNCTION taskmeter_take_slots(
    p_task_id text, p_lease_token text, p_lanes text[], p_limits integer[], p_now timestamptz
  ) RETURNS boolean
  LANGUAGE plpgsql AS $fn$
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
  $fn$`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
