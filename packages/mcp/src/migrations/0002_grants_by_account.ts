/**
 * An index of grants by account, newest first, for the operator's list of an account's MCP
 * sign-ins (`OAuthStore.listActiveGrants`).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`CREATE INDEX IF NOT EXISTS oauth_grants_account ON oauth_grants (account_id, created_at DESC)`).unprepared
})
