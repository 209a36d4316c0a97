/**
 * Authentication in batches: `taskmeter_authenticate_batch` counts one request for each
 * (hash, now) pair of two parallel arrays, in one statement and one transaction, and answers
 * each by its ordinal (1-based, the arrays' order); an unknown hash has no row.
 *
 * Each pair goes through `taskmeter_authenticate`, so a batch counts exactly as the same calls
 * made one by one: several requests of one key in a batch are counted one after the other, in
 * arrival order, and the window restarts where it would have. Keys are taken in hash order, so
 * batches running side by side (in this process or another) lock their window rows in one
 * order and cannot deadlock. The commit stays asynchronous, as for a single authentication.
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
