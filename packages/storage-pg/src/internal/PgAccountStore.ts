import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { AccountStore } from "@taskmeter/kernel"
import * as Batcher from "./Batcher.ts"
import * as Failures from "./Failures.ts"
import type { AccountRow, ApiKeyRow } from "./Rows.ts"
import { apiKeyColumns, toAccount, toApiKey, toAuthenticated } from "./Rows.ts"

/**
 * Authentication batches written at once, how many of them may hold one key, and their largest
 * size (see Batcher). A key's batches queue on its window row, so one in flight per key lets the
 * others gather into the next batch.
 */
const AUTHENTICATION_BATCHES = 4
const AUTHENTICATION_BATCHES_PER_KEY = 1
const MAX_AUTHENTICATION_BATCH = 100

interface AuthenticatedRow extends ApiKeyRow {
  readonly ordinal: number
  readonly window_started: Date
  readonly window_requests: number
}

interface Authentication {
  readonly hash: string
  readonly now: Date
}

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  // Every request authenticates: one statement and one transaction per batch of them, as for admissions.
  const authenticateBatch = (calls: ReadonlyArray<Authentication>) =>
    Failures.run(
      "authenticate",
      sql<AuthenticatedRow>`SELECT a.ordinal, ${sql.literal(apiKeyColumns("(a.key)"))}, a.window_started, a.window_requests
        FROM taskmeter_authenticate_batch(
          ${calls.map((call) => call.hash)}::text[],
          ${calls.map((call) => call.now.toISOString())}::timestamptz[]
        ) a`.pipe(
        Effect.map((rows) => {
          const results: Array<AccountStore.Authenticated | undefined> = calls.map(() => undefined)
          for (const row of rows) {
            results[row.ordinal - 1] = toAuthenticated(row, row.window_started, row.window_requests)
          }
          return results
        })
      )
    )

  const authenticate = yield* Batcher.make({
    key: (call: Authentication) => call.hash,
    maxBatch: MAX_AUTHENTICATION_BATCH,
    concurrency: AUTHENTICATION_BATCHES,
    perKey: () => AUTHENTICATION_BATCHES_PER_KEY,
    run: authenticateBatch
  })

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
          Effect.map((rows) => (rows.length === 0 ? undefined : toAccount(rows[0])))
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

    setResultRetention: (accountId, days) =>
      Failures.run(
        "setResultRetention",
        sql`UPDATE accounts SET result_retention_days = ${days} WHERE id = ${accountId} RETURNING id`.pipe(
          Effect.map((rows) => rows.length > 0)
        )
      ),

    getResultRetention: (accountId) =>
      Failures.run(
        "getResultRetention",
        sql<{ readonly result_retention_days: number | null }>`SELECT result_retention_days FROM accounts
          WHERE id = ${accountId}`.pipe(Effect.map((rows) => rows[0]?.result_retention_days ?? null))
      ),

    authenticate: (hash, now) => authenticate({ hash, now })
  })
})
