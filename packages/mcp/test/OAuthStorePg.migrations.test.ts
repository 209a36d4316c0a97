/**
 * The OAuth store's migrations on PostgreSQL and PGlite: from an empty schema, and over tables
 * that earlier versions made without them, whose rows (sign-ins included) must survive.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { OAuthStore, OAuthStorePg } from "../src/index.ts"
import * as LegacyOAuthSchema from "./support/LegacyOAuthSchema.ts"
import { pglite, postgres, removePglite } from "./support/TestDatabase.ts"

afterAll(removePglite)

const T0 = new Date("2030-01-01T00:00:00.000Z")
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000)
const RESOURCE = "https://api.example.com/mcp"

const tables = [
  "oauth_clients",
  "oauth_codes",
  "oauth_grants",
  "oauth_pending",
  "oauth_registration_counts",
  "oauth_signin_codes",
  "oauth_tokens",
  "taskmeter_oauth_migrations"
]

const allMigrations = Effect.map(Effect.orDie(OAuthStorePg.migrations), (loaded) => loaded.map(([id, name]) => [id, name]))

/** What the schema holds, and what the migrator says when asked to run again. */
const inspect = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const names = yield* sql<{ readonly table_name: string }>`SELECT table_name FROM information_schema.tables
    WHERE table_schema = current_schema() ORDER BY table_name`
  const recorded = yield* sql<{ readonly migration_id: number; readonly name: string }>`SELECT migration_id, name
    FROM taskmeter_oauth_migrations ORDER BY migration_id`
  return {
    tables: names.map((row) => row.table_name),
    recorded: recorded.map((row) => [row.migration_id, row.name]),
    rerun: yield* OAuthStorePg.migrate
  }
})

/** The columns, indexes and constraints of the schema, without its name. */
const definition = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const columns = yield* sql`SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default
    FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`
  const indexes = yield* sql`SELECT tablename, indexname, replace(indexdef, current_schema() || '.', '') AS indexdef
    FROM pg_indexes WHERE schemaname = current_schema() ORDER BY tablename, indexname`
  const constraints = yield* sql`SELECT conrelid::regclass::text AS table_name, conname, pg_get_constraintdef(oid) AS def
    FROM pg_constraint WHERE connamespace = current_schema()::regnamespace ORDER BY 1, 2`
  return { columns, indexes, constraints }
})

const legacyTables = SqlClient.SqlClient.use((sql) =>
  Effect.forEach(LegacyOAuthSchema.statements, (statement) => sql.unsafe(statement).unprepared, { discard: true })
)

/** One of each thing an earlier version kept: a sign-in in its every stage, and a full window. */
const legacyRows = SqlClient.SqlClient.use((sql) =>
  Effect.all(
    [
      sql`INSERT INTO oauth_clients VALUES ('mcpc_legacy', NULL, 'none', ARRAY['http://127.0.0.1/cb'], 'Legacy',
      '{"client_name":"Legacy"}'::jsonb, ${T0}, NULL)`,
      sql`INSERT INTO oauth_pending VALUES ('pending-1', 'csrf-hash', 'mcpc_legacy', 'Legacy', false, 'http://127.0.0.1/cb',
      's1', 'challenge', ARRAY['jobs:read'], ${RESOURCE}, 1, ${T0}, ${at(600)})`,
      sql`INSERT INTO oauth_codes VALUES ('code-hash', 'grant-2', 'mcpc_legacy', 'http://127.0.0.1/cb', 'challenge',
      'acct_legacy', 'key_legacy', ARRAY['jobs:read'], ${RESOURCE}, ${T0}, ${at(300)}, NULL)`,
      sql`INSERT INTO oauth_grants VALUES ('grant-1', 'mcpc_legacy', 'acct_legacy', 'key_legacy',
      ARRAY['jobs:read', 'usage:read'], ${RESOURCE}, ${T0}, NULL)`,
      sql`INSERT INTO oauth_tokens VALUES
      ('access-hash', 'access', 'grant-1', ARRAY['jobs:read', 'usage:read'], ${T0}, ${at(3600)}, NULL),
      ('refresh-hash', 'refresh', 'grant-1', ARRAY['jobs:read', 'usage:read'], ${T0}, ${at(30 * 86400)}, NULL)`,
      sql`INSERT INTO oauth_signin_codes VALUES ('signin-hash', 'acct_legacy', ${T0}, ${at(600)}, NULL)`,
      sql`INSERT INTO oauth_registration_counts VALUES ('192.0.2.1', ${T0}, ${at(3600)}, 20)`
    ],
    { discard: true }
  )
)

/** Reads back every legacy row through the store, then carries the sign-in on. */
const readLegacyRows = Effect.gen(function* () {
  const store = yield* OAuthStore.OAuthStore
  expect(yield* store.getClient("mcpc_legacy")).toEqual({
    clientId: "mcpc_legacy",
    secretHash: null,
    tokenEndpointAuthMethod: "none",
    redirectUris: ["http://127.0.0.1/cb"],
    clientName: "Legacy",
    metadata: { client_name: "Legacy" },
    createdAt: T0,
    unusedExpiresAt: null
  })
  expect(yield* store.getPending("pending-1", at(60))).toEqual({
    id: "pending-1",
    csrfHash: "csrf-hash",
    clientId: "mcpc_legacy",
    clientName: "Legacy",
    clientVerified: false,
    redirectUri: "http://127.0.0.1/cb",
    state: "s1",
    codeChallenge: "challenge",
    scopes: ["jobs:read"],
    resource: RESOURCE,
    failedAttempts: 1,
    createdAt: T0,
    expiresAt: at(600)
  })
  expect(yield* store.getCode("code-hash")).toEqual({
    hash: "code-hash",
    grantId: "grant-2",
    clientId: "mcpc_legacy",
    redirectUri: "http://127.0.0.1/cb",
    codeChallenge: "challenge",
    accountId: "acct_legacy",
    apiKeyId: "key_legacy",
    scopes: ["jobs:read"],
    resource: RESOURCE,
    createdAt: T0,
    expiresAt: at(300),
    redeemedAt: null
  })
  expect(yield* store.findToken("access-hash")).toEqual({
    token: {
      hash: "access-hash",
      kind: "access",
      grantId: "grant-1",
      scopes: ["jobs:read", "usage:read"],
      createdAt: T0,
      expiresAt: at(3600),
      rotatedAt: null
    },
    grant: {
      id: "grant-1",
      clientId: "mcpc_legacy",
      accountId: "acct_legacy",
      apiKeyId: "key_legacy",
      scopes: ["jobs:read", "usage:read"],
      resource: RESOURCE,
      createdAt: T0,
      revokedAt: null
    }
  })
  expect(yield* store.redeemSignInCode("signin-hash", at(60))).toBe("acct_legacy")
  expect(yield* store.admitRegistration({ source: "192.0.2.1", start: T0, end: at(3600), perSource: 20, total: 1000 })).toEqual({
    _tag: "Limited",
    by: "source"
  })
  const next = {
    accessHash: "access-hash-2",
    accessExpiresAt: at(7200),
    refreshHash: "refresh-hash-2",
    refreshExpiresAt: at(31 * 86400),
    scopes: ["jobs:read", "usage:read"] as const
  }
  expect(yield* store.rotateRefresh("refresh-hash", at(3600), next)).toEqual({ _tag: "Rotated" })
  expect(yield* store.findToken("access-hash-2")).toMatchObject({ grant: { id: "grant-1", revokedAt: null } })
})

const newClient = {
  clientId: "mcpc_kept",
  secretHash: null,
  tokenEndpointAuthMethod: "none" as const,
  redirectUris: ["http://127.0.0.1/cb"],
  clientName: "Kept",
  metadata: {},
  createdAt: T0,
  unusedExpiresAt: at(86400)
}

const databases = [
  ["PostgreSQL", postgres],
  ["PGlite", pglite]
] as const

for (const [name, database] of databases) {
  describe(`OAuth migrations on ${name}`, () => {
    it.live(
      "create every table in an empty schema, once, and a later start keeps the data",
      () =>
        Effect.gen(function* () {
          const first = yield* Effect.gen(function* () {
            yield* OAuthStore.OAuthStore.use((store) => store.insertClient(newClient))
            return yield* inspect
          }).pipe(Effect.provide(OAuthStorePg.layer))
          expect(first).toEqual({ tables, recorded: yield* allMigrations, rerun: [] })

          const kept = yield* OAuthStore.OAuthStore.use((store) => store.getClient(newClient.clientId)).pipe(
            Effect.provide(OAuthStorePg.layer)
          )
          expect(kept).toEqual(newClient)
        }).pipe(Effect.provide(database)),
      // On PGlite the first case also starts PostgreSQL-in-WebAssembly from nothing: slow on a busy machine.
      120_000
    )

    it.live("adopt the tables of the statements run before migrations, rows and sign-ins intact", () =>
      Effect.gen(function* () {
        const fresh = yield* definition.pipe(Effect.provide(OAuthStorePg.layer), Effect.provide(database))
        const adopted = yield* Effect.gen(function* () {
          yield* legacyTables
          yield* legacyRows
          return yield* Effect.gen(function* () {
            yield* readLegacyRows
            expect(yield* inspect).toEqual({ tables, recorded: yield* allMigrations, rerun: [] })
            return yield* definition
          }).pipe(Effect.provide(OAuthStorePg.layer))
        }).pipe(Effect.provide(database))
        expect(adopted).toEqual(fresh)
      })
    )
  })
}

describe("OAuth migrations on PostgreSQL over tables made before unused_expires_at", () => {
  it.live("add the column, and keep the clients registered before it for good", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(`CREATE TABLE oauth_clients (
        client_id text PRIMARY KEY, secret_hash text, token_endpoint_auth_method text NOT NULL,
        redirect_uris text[] NOT NULL, client_name text, metadata jsonb NOT NULL, created_at timestamptz NOT NULL)`)
      yield* sql`INSERT INTO oauth_clients VALUES ('mcpc_legacy', NULL, 'none', ARRAY['http://127.0.0.1/cb'], 'Old',
        '{}'::jsonb, '2020-01-01T00:00:00Z')`
      yield* Effect.gen(function* () {
        const store = yield* OAuthStore.OAuthStore
        expect(yield* store.getClient("mcpc_legacy")).toMatchObject({ clientName: "Old", unusedExpiresAt: null })
        yield* store.purgeExpired(new Date("2040-01-01T00:00:00Z"))
        expect(yield* store.getClient("mcpc_legacy")).toBeDefined()
      }).pipe(Effect.provide(OAuthStorePg.layer))
    }).pipe(Effect.provide(postgres))
  )
})
