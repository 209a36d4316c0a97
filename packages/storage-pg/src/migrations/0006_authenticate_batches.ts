/**
 * Authentication in batches: `taskmeter_authenticate_batch` counts one request for each (hash, now)
 * pair of two parallel arrays through `taskmeter_authenticate`, in one statement and transaction,
 * answering each by its 1-based ordinal (an unknown hash has no row). It counts exactly as the calls
 * one by one would; keys are taken in hash order, so concurrent batches cannot deadlock.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE FUNCTION taskmeter_authenticate_batch(p_hashes text[], p_nows timestamptz[])
  RETURNS TABLE (ordinal integer, key api_keys, window_started timestamptz, window_requests integer)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    r record;
  BEGIN
    FOR r IN
      SELECT x.hash, x.now, x.ordinal::integer AS ordinal
        FROM unnest(p_hashes, p_nows) WITH ORDINALITY AS x(hash, now, ordinal)
        ORDER BY x.hash COLLATE "C", x.ordinal
    LOOP
      RETURN QUERY SELECT r.ordinal, a.key, a.window_started, a.window_requests
        FROM taskmeter_authenticate(r.hash, r.now) a;
    END LOOP;
  END
  $fn$`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
