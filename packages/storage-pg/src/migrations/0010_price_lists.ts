/**
 * The task price list, shared by every process on the database (PriceStore): an append-only
 * history, one row per version, the current list being the highest version. The primary key is
 * what makes a save a compare-and-set across processes: of two saves based on one version, both
 * insert the next number and the second one meets the first's row.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE TABLE price_lists (
    version bigint PRIMARY KEY CHECK (version >= 1),
    list jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  )`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
