/**
 * Failed sign-ins per throttle key (an email, a client address, a passkey) in fixed windows,
 * shared by every process on the database. One row a key; rows whose window ended are deleted a
 * bounded number at a time by the next failure, through the index on the window's start.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE TABLE sign_in_failures (
    key text PRIMARY KEY CHECK (length(key) BETWEEN 1 AND 600),
    window_start timestamptz NOT NULL,
    failures integer NOT NULL CHECK (failures > 0)
  )`,
  `CREATE INDEX sign_in_failures_window_start ON sign_in_failures (window_start)`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
