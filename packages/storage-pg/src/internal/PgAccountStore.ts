import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { AccountStore } from "@taskmeter/kernel"
import * as Failures from "./Failures.ts"
import type { AccountRow, ApiKeyRow } from "./Rows.ts"
import { apiKeyColumns, toAccount, toApiKey } from "./Rows.ts"

const WINDOW_MS = 60_000

interface AuthenticatedRow extends ApiKeyRow {
  readonly window_started: Date
  readonly window_requests: number
}

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  return AccountStore.AccountStore.of({
    createAccount: (account) =>
      Failures.run(
        "createAccount",
        sql`INSERT INTO accounts (id, name, created_at)
            VALUES (${account.id}, ${account.name}, ${account.createdAt})`.pipe(Effect.as(account))
      ),

    getAccount: (id) =>
      Failures.run(
        "getAccount",
        sql<AccountRow>`SELECT id, name, created_at FROM accounts WHERE id = ${id}`.pipe(
          Effect.map((rows) => rows.length === 0 ? undefined : toAccount(rows[0]))
        )
      ),

    listAccounts: Failures.run(
      "listAccounts",
      sql<AccountRow>`SELECT id, name, created_at FROM accounts ORDER BY seq`.pipe(Effect.map((rows) => rows.map(toAccount)))
    ),

    insertApiKey: (key) =>
      Failures.run(
        "insertApiKey",
        Effect.asVoid(sql`WITH inserted AS (
            INSERT INTO api_keys (
              id, account_id, name, display_prefix, hash, scopes, created_at, revoked_at,
              rate_limit_per_minute, usage_limit, usage_count
            ) VALUES (
              ${key.id}, ${key.accountId}, ${key.name}, ${key.displayPrefix}, ${key.hash}, ${key.scopes}::text[],
              ${key.createdAt}, ${key.revokedAt}::timestamptz, ${key.rateLimitPerMinute}::integer,
              ${key.usageLimit}::integer, ${key.usageCount}
            ) RETURNING id
          )
          INSERT INTO api_key_windows (api_key_id) SELECT id FROM inserted`)
      ),

    listApiKeys: (accountId) =>
      Failures.run(
        "listApiKeys",
        sql<ApiKeyRow>`SELECT ${sql.literal(apiKeyColumns("api_keys"))} FROM api_keys WHERE account_id = ${accountId} ORDER BY seq`.pipe(
          Effect.map((rows) => rows.map(toApiKey))
        )
      ),

    revokeApiKey: (accountId, keyId, at) =>
      Failures.run(
        "revokeApiKey",
        sql`UPDATE api_keys SET revoked_at = coalesce(revoked_at, ${at})
            WHERE id = ${keyId} AND account_id = ${accountId}
            RETURNING id`.pipe(Effect.map((rows) => rows.length > 0))
      ),

    authenticate: (hash, now) =>
      Failures.run(
        "authenticate",
        sql<AuthenticatedRow>`SELECT ${sql.literal(apiKeyColumns("(a.key)"))}, a.window_started, a.window_requests
          FROM taskmeter_authenticate(${hash}, ${now}) a`.pipe(
          Effect.map((rows) =>
            rows.length === 0 ? undefined : {
              key: toApiKey(rows[0]),
              requestsInWindow: rows[0].window_requests,
              windowResetsAt: new Date(rows[0].window_started.getTime() + WINDOW_MS)
            }
          )
        )
      )
  })
})
