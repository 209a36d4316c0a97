/**
 * The chat price list, shared by every process on the database (ChatPriceStore): an append-only
 * history like the task price list's (0010), one row per version, the primary key making a save a
 * compare-and-set across processes.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE TABLE chat_price_lists (
    version bigint PRIMARY KEY CHECK (version >= 1),
    list jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  )`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
