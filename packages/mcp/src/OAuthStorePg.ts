/**
 * The OAuthStore on PostgreSQL, over the SqlClient storage-pg's PgStore provides (same database
 * and schema), with its own migrations (`taskmeter_oauth_migrations`, run at start; concurrent
 * starts migrate once). The port's once-only promises (sign-in taken, code redeemed, refresh
 * rotated, sign-in code used, registration counted) hold across processes through conditional
 * UPDATE/DELETE ... RETURNING and row locks. Why its own migrations: docs/decisions.md, MCP.
 */
import { Effect, Layer, Schedule } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { StoreError } from "@taskmeter/kernel"
import type { Ids, Scope } from "@taskmeter/kernel"
import { OAuthStore } from "./OAuthStore.ts"
import type {
  AuthorizationCode,
  Grant,
  NewTokens,
  PendingAuthorization,
  RegisteredClient,
  TokenEndpointAuthMethod,
  TokenKind,
  TokenRecord
} from "./OAuthStore.ts"
import oauthSchema from "./migrations/0001_oauth_schema.ts"
import grantsByAccount from "./migrations/0002_grants_by_account.ts"

export const migrationsTable = "taskmeter_oauth_migrations"

/** The migrations, by number. Never edit one that has shipped: add the next. */
export const migrations = Migrator.fromRecord({
  "1_oauth_schema": oauthSchema,
  "2_grants_by_account": grantsByAccount
})

/** Runs the pending migrations in the SqlClient's schema; the ids and names of those it ran. */
export const migrate = Migrator.make({})({ loader: migrations, table: migrationsTable })

/** The bucket of a window's total; sources are addresses, networks or `unknown`, never this. */
const TOTAL_BUCKET = "*"

interface ClientRow {
  readonly client_id: string
  readonly secret_hash: string | null
  readonly token_endpoint_auth_method: string
  readonly redirect_uris: ReadonlyArray<string>
  readonly client_name: string | null
  readonly metadata: { readonly [member: string]: unknown }
  readonly created_at: Date
  readonly unused_expires_at: Date | null
}

interface PendingRow {
  readonly id: string
  readonly csrf_hash: string
  readonly client_id: string
  readonly client_name: string | null
  readonly client_verified: boolean
  readonly redirect_uri: string
  readonly state: string | null
  readonly code_challenge: string
  readonly scopes: ReadonlyArray<string>
  readonly resource: string
  readonly failed_attempts: number
  readonly created_at: Date
  readonly expires_at: Date
}

interface CodeRow {
  readonly hash: string
  readonly grant_id: string
  readonly client_id: string
  readonly redirect_uri: string
  readonly code_challenge: string
  readonly account_id: string
  readonly api_key_id: string | null
  readonly scopes: ReadonlyArray<string>
  readonly resource: string
  readonly created_at: Date
  readonly expires_at: Date
  readonly redeemed_at: Date | null
}

interface GrantRow {
  readonly id: string
  readonly client_id: string
  readonly account_id: string
  readonly api_key_id: string | null
  readonly scopes: ReadonlyArray<string>
  readonly resource: string
  readonly created_at: Date
  readonly revoked_at: Date | null
}

interface TokenRow {
  readonly hash: string
  readonly kind: string
  readonly grant_id: string
  readonly scopes: ReadonlyArray<string>
  readonly created_at: Date
  readonly expires_at: Date
  readonly rotated_at: Date | null
}

// Rows hold what this module wrote, so their text columns are the port's literal types.
const scopesOf = (scopes: ReadonlyArray<string>) => scopes as ReadonlyArray<Scope.Scope>

const toClient = (row: ClientRow): RegisteredClient => ({
  clientId: row.client_id,
  secretHash: row.secret_hash,
  tokenEndpointAuthMethod: row.token_endpoint_auth_method as TokenEndpointAuthMethod,
  redirectUris: row.redirect_uris,
  clientName: row.client_name,
  metadata: row.metadata,
  createdAt: row.created_at,
  unusedExpiresAt: row.unused_expires_at
})

const toPending = (row: PendingRow): PendingAuthorization => ({
  id: row.id,
  csrfHash: row.csrf_hash,
  clientId: row.client_id,
  clientName: row.client_name,
  clientVerified: row.client_verified,
  redirectUri: row.redirect_uri,
  state: row.state,
  codeChallenge: row.code_challenge,
  scopes: scopesOf(row.scopes),
  resource: row.resource,
  failedAttempts: row.failed_attempts,
  createdAt: row.created_at,
  expiresAt: row.expires_at
})

const toCode = (row: CodeRow): AuthorizationCode => ({
  hash: row.hash,
  grantId: row.grant_id,
  clientId: row.client_id,
  redirectUri: row.redirect_uri,
  codeChallenge: row.code_challenge,
  accountId: row.account_id as Ids.AccountId,
  apiKeyId: row.api_key_id as Ids.ApiKeyId | null,
  scopes: scopesOf(row.scopes),
  resource: row.resource,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  redeemedAt: row.redeemed_at
})

const toGrant = (row: GrantRow): Grant => ({
  id: row.id,
  clientId: row.client_id,
  accountId: row.account_id as Ids.AccountId,
  apiKeyId: row.api_key_id as Ids.ApiKeyId | null,
  scopes: scopesOf(row.scopes),
  resource: row.resource,
  createdAt: row.created_at,
  revokedAt: row.revoked_at
})

const toToken = (row: TokenRow): TokenRecord => ({
  hash: row.hash,
  kind: row.kind as TokenKind,
  grantId: row.grant_id,
  scopes: scopesOf(row.scopes),
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  rotatedAt: row.rotated_at
})

const contended = (error: SqlError) => error.reason._tag === "DeadlockError" || error.reason._tag === "SerializationError"

/** Retries lost conflicts; anything else the database says is StoreUnavailable. */
const run = <A, R>(operation: string, effect: Effect.Effect<A, SqlError, R>) =>
  effect.pipe(
    Effect.retry({ while: contended, schedule: Schedule.max([Schedule.recurs(5), Schedule.exponential("2 millis")]) }),
    Effect.mapError(
      (error) => new StoreError.StoreUnavailable({ message: `OAuthStore.${operation}: ${error.message}`, cause: error })
    )
  )

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* migrate.pipe(
    Effect.mapError((error) => new StoreError.StoreUnavailable({ message: `OAuthStore.migrate: ${error.message}`, cause: error }))
  )

  const insertTokens = (grantId: string, now: Date, next: NewTokens) =>
    sql`INSERT INTO oauth_tokens (hash, kind, grant_id, scopes, created_at, expires_at) VALUES
      (${next.accessHash}, 'access', ${grantId}, ${next.scopes}::text[], ${now}, ${next.accessExpiresAt}),
      (${next.refreshHash}, 'refresh', ${grantId}, ${next.scopes}::text[], ${now}, ${next.refreshExpiresAt})`

  const revoke = (grantId: string, now: Date) =>
    sql`UPDATE oauth_grants SET revoked_at = ${now} WHERE id = ${grantId} AND revoked_at IS NULL RETURNING id`.pipe(
      Effect.map((rows) => rows.length > 0)
    )

  return OAuthStore.of({
    insertClient: (client) =>
      run(
        "insertClient",
        Effect.asVoid(sql`INSERT INTO oauth_clients
        (client_id, secret_hash, token_endpoint_auth_method, redirect_uris, client_name, metadata, created_at, unused_expires_at)
        VALUES (${client.clientId}, ${client.secretHash}, ${client.tokenEndpointAuthMethod}, ${client.redirectUris}::text[],
          ${client.clientName}, ${JSON.stringify(client.metadata)}::jsonb, ${client.createdAt},
          ${client.unusedExpiresAt}::timestamptz)`)
      ),
    getClient: (clientId) =>
      run(
        "getClient",
        sql<ClientRow>`SELECT * FROM oauth_clients WHERE client_id = ${clientId}`.pipe(
          Effect.map((rows) => (rows.length === 0 ? undefined : toClient(rows[0]!)))
        )
      ),

    insertPending: (pending) =>
      run(
        "insertPending",
        Effect.asVoid(sql`INSERT INTO oauth_pending
        (id, csrf_hash, client_id, client_name, client_verified, redirect_uri, state, code_challenge, scopes, resource,
         failed_attempts, created_at, expires_at)
        VALUES (${pending.id}, ${pending.csrfHash}, ${pending.clientId}, ${pending.clientName}, ${pending.clientVerified},
          ${pending.redirectUri}, ${pending.state}, ${pending.codeChallenge}, ${pending.scopes}::text[], ${pending.resource},
          ${pending.failedAttempts}, ${pending.createdAt}, ${pending.expiresAt})`)
      ),
    getPending: (id, now) =>
      run(
        "getPending",
        sql<PendingRow>`SELECT * FROM oauth_pending WHERE id = ${id} AND expires_at > ${now}`.pipe(
          Effect.map((rows) => (rows.length === 0 ? undefined : toPending(rows[0]!)))
        )
      ),
    recordFailedAttempt: (id, now) =>
      run(
        "recordFailedAttempt",
        sql<{ readonly failed_attempts: number }>`UPDATE oauth_pending SET failed_attempts = failed_attempts + 1
          WHERE id = ${id} AND expires_at > ${now} RETURNING failed_attempts`.pipe(Effect.map((rows) => rows[0]?.failed_attempts))
      ),
    takePending: (id, now) =>
      run(
        "takePending",
        sql<PendingRow>`DELETE FROM oauth_pending WHERE id = ${id} RETURNING *`.pipe(
          Effect.map((rows) =>
            rows.length === 0 || rows[0]!.expires_at.getTime() <= now.getTime() ? undefined : toPending(rows[0]!)
          )
        )
      ),

    insertCode: (code) =>
      run(
        "insertCode",
        Effect.asVoid(sql`INSERT INTO oauth_codes
        (hash, grant_id, client_id, redirect_uri, code_challenge, account_id, api_key_id, scopes, resource, created_at,
         expires_at, redeemed_at)
        VALUES (${code.hash}, ${code.grantId}, ${code.clientId}, ${code.redirectUri}, ${code.codeChallenge},
          ${code.accountId}, ${code.apiKeyId}, ${code.scopes}::text[], ${code.resource}, ${code.createdAt},
          ${code.expiresAt}, ${code.redeemedAt}::timestamptz)`)
      ),
    getCode: (hash) =>
      run(
        "getCode",
        sql<CodeRow>`SELECT * FROM oauth_codes WHERE hash = ${hash}`.pipe(
          Effect.map((rows) => (rows.length === 0 ? undefined : toCode(rows[0]!)))
        )
      ),
    redeemCode: (hash, now, next) =>
      run(
        "redeemCode",
        sql.withTransaction(
          Effect.gen(function* () {
            const won = yield* sql<CodeRow>`UPDATE oauth_codes SET redeemed_at = ${now}
            WHERE hash = ${hash} AND redeemed_at IS NULL AND expires_at > ${now} RETURNING *`
            if (won.length > 0) {
              const code = toCode(won[0]!)
              const rows = yield* sql<GrantRow>`INSERT INTO oauth_grants
              (id, client_id, account_id, api_key_id, scopes, resource, created_at)
              VALUES (${code.grantId}, ${code.clientId}, ${code.accountId}, ${code.apiKeyId}, ${code.scopes}::text[],
                ${code.resource}, ${now})
              RETURNING *`
              yield* insertTokens(code.grantId, now, next)
              yield* sql`UPDATE oauth_clients SET unused_expires_at = NULL
              WHERE client_id = ${code.clientId} AND unused_expires_at IS NOT NULL`
              return { _tag: "Redeemed", grant: toGrant(rows[0]!) } as const
            }
            const seen = yield* sql<CodeRow>`SELECT * FROM oauth_codes WHERE hash = ${hash}`
            if (seen.length === 0 || seen[0]!.redeemed_at === null) return { _tag: "Invalid" } as const
            yield* revoke(seen[0]!.grant_id, now)
            return { _tag: "AlreadyRedeemed" } as const
          })
        )
      ),

    findToken: (hash) =>
      run(
        "findToken",
        sql<TokenRow & { readonly g: GrantRow }>`SELECT t.*, row_to_json(g) AS g
          FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE t.hash = ${hash}`.pipe(
          Effect.map((rows) => {
            if (rows.length === 0) return undefined
            const { g, ...token } = rows[0]!
            return {
              token: toToken(token),
              grant: toGrant({
                ...g,
                created_at: new Date(g.created_at),
                revoked_at: g.revoked_at === null ? null : new Date(g.revoked_at)
              })
            }
          })
        )
      ),
    rotateRefresh: (hash, now, next) =>
      run(
        "rotateRefresh",
        sql.withTransaction(
          Effect.gen(function* () {
            const won = yield* sql<{ readonly grant_id: string }>`UPDATE oauth_tokens t SET rotated_at = ${now}
            FROM oauth_grants g
            WHERE t.hash = ${hash} AND t.kind = 'refresh' AND t.rotated_at IS NULL AND t.expires_at > ${now}
              AND g.id = t.grant_id AND g.revoked_at IS NULL
            RETURNING t.grant_id`
            if (won.length > 0) {
              yield* insertTokens(won[0]!.grant_id, now, next)
              return { _tag: "Rotated" } as const
            }
            const seen = yield* sql<TokenRow>`SELECT * FROM oauth_tokens WHERE hash = ${hash} AND kind = 'refresh'`
            if (seen.length === 0 || seen[0]!.rotated_at === null) return { _tag: "Invalid" } as const
            yield* revoke(seen[0]!.grant_id, now)
            return { _tag: "Reused" } as const
          })
        )
      ),
    revokeGrant: (grantId, now) => run("revokeGrant", revoke(grantId, now)),
    getGrant: (grantId) =>
      run(
        "getGrant",
        sql<GrantRow>`SELECT * FROM oauth_grants WHERE id = ${grantId}`.pipe(
          Effect.map((rows) => (rows.length === 0 ? undefined : toGrant(rows[0]!)))
        )
      ),
    listActiveGrants: (accountId, now) =>
      run(
        "listActiveGrants",
        sql<GrantRow & { readonly client_name: string | null; readonly last_issued_at: Date; readonly refresh_expires_at: Date }>`
          SELECT g.*, c.client_name,
            (SELECT max(t.created_at) FROM oauth_tokens t WHERE t.grant_id = g.id) AS last_issued_at,
            r.expires_at AS refresh_expires_at
          FROM oauth_grants g
          JOIN LATERAL (SELECT t.expires_at FROM oauth_tokens t
            WHERE t.grant_id = g.id AND t.kind = 'refresh' AND t.rotated_at IS NULL AND t.expires_at > ${now}
            ORDER BY t.expires_at DESC LIMIT 1) r ON true
          LEFT JOIN oauth_clients c ON c.client_id = g.client_id
          WHERE g.account_id = ${accountId} AND g.revoked_at IS NULL
          ORDER BY g.created_at DESC, g.id`.pipe(
          Effect.map((rows) =>
            rows.map(({ client_name, last_issued_at, refresh_expires_at, ...grant }) => ({
              grant: toGrant(grant),
              clientName: client_name,
              lastIssuedAt: last_issued_at,
              refreshExpiresAt: refresh_expires_at
            }))
          )
        )
      ),

    insertSignInCode: (code) =>
      run(
        "insertSignInCode",
        Effect.asVoid(sql`INSERT INTO oauth_signin_codes (hash, account_id, created_at, expires_at)
        VALUES (${code.hash}, ${code.accountId}, ${code.createdAt}, ${code.expiresAt})`)
      ),
    redeemSignInCode: (hash, now) =>
      run(
        "redeemSignInCode",
        sql<{ readonly account_id: string }>`UPDATE oauth_signin_codes SET used_at = ${now}
          WHERE hash = ${hash} AND used_at IS NULL AND expires_at > ${now} RETURNING account_id`.pipe(
          Effect.map((rows) => rows[0]?.account_id as Ids.AccountId | undefined)
        )
      ),

    admitRegistration: (window) =>
      run(
        "admitRegistration",
        sql.withTransaction(
          Effect.gen(function* () {
            const count = (bucket: string, limit: number) =>
              sql<{ readonly count: number }>`INSERT INTO oauth_registration_counts AS c (bucket, window_start, window_end, count)
              VALUES (${bucket}, ${window.start}, ${window.end}, 1)
              ON CONFLICT (bucket, window_start) DO UPDATE SET count = c.count + 1 WHERE c.count < ${limit}
              RETURNING count`.pipe(Effect.map((rows) => rows.length > 0))
            if (!(yield* count(window.source, window.perSource))) return { _tag: "Limited", by: "source" } as const
            if (!(yield* count(TOTAL_BUCKET, window.total))) {
              yield* sql`UPDATE oauth_registration_counts SET count = count - 1
              WHERE bucket = ${window.source} AND window_start = ${window.start}`
              return { _tag: "Limited", by: "total" } as const
            }
            return { _tag: "Admitted" } as const
          })
        )
      ),

    admitRequest: (window) =>
      run(
        "admitRequest",
        sql<{ readonly count: number }>`INSERT INTO oauth_registration_counts AS c (bucket, window_start, window_end, count)
          VALUES (${window.bucket}, ${window.start}, ${window.end}, 1)
          ON CONFLICT (bucket, window_start) DO UPDATE SET count = c.count + 1 WHERE c.count < ${window.limit}
          RETURNING count`.pipe(Effect.map((rows) => rows.length > 0))
      ),

    purgeExpired: (now) =>
      run(
        "purgeExpired",
        sql.withTransaction(
          Effect.gen(function* () {
            const counts = yield* Effect.all([
              sql`DELETE FROM oauth_pending WHERE expires_at <= ${now} RETURNING 1`,
              sql`DELETE FROM oauth_codes WHERE expires_at <= ${now} RETURNING 1`,
              sql`DELETE FROM oauth_signin_codes WHERE expires_at <= ${now} RETURNING 1`,
              sql`DELETE FROM oauth_tokens WHERE expires_at <= ${now} RETURNING 1`,
              sql`DELETE FROM oauth_grants g WHERE NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.grant_id = g.id) RETURNING 1`,
              sql`DELETE FROM oauth_registration_counts WHERE window_end <= ${now} RETURNING 1`,
              // After the sign-ins and codes above: those still there are in progress.
              sql`DELETE FROM oauth_clients c WHERE c.unused_expires_at <= ${now}
              AND NOT EXISTS (SELECT 1 FROM oauth_pending p WHERE p.client_id = c.client_id)
              AND NOT EXISTS (SELECT 1 FROM oauth_codes k WHERE k.client_id = c.client_id) RETURNING 1`
            ])
            return counts.reduce((sum, rows) => sum + rows.length, 0)
          })
        )
      )
  })
})

/** The OAuthStore in the database of the SqlClient in context; runs its migrations at start. */
export const layer: Layer.Layer<OAuthStore, StoreError.StoreUnavailable, SqlClient.SqlClient> = Layer.effect(OAuthStore, make)
