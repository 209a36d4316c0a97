/**
 * The ledger's entries by time for the kinds a period report reads (task charges and releases,
 * refunds): the revenue report takes one range of this index per period, never the whole journal.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE INDEX ledger_entries_period ON ledger_entries (created_at) WHERE kind IN ('charge', 'release', 'refund')`,
  `COMMENT ON INDEX ledger_entries_period IS 'Serves admin revenue: the charge, release and refund entries of a period, by time.'`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
