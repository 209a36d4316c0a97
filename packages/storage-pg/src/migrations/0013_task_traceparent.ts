/**
 * The submitting request's W3C trace context kept with its task (`traceparent`, null when the
 * request was not traced), so that a worker in any process links its spans to it. A nullable
 * column without a default: adding it rewrites nothing; its format is checked for new rows only.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `ALTER TABLE tasks ADD COLUMN traceparent text`,
  `ALTER TABLE tasks ADD CONSTRAINT tasks_traceparent_w3c
    CHECK (traceparent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$') NOT VALID`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
