/**
 * The OAuth tables, exactly as OAuthStorePg created them at every start before its schema was
 * versioned. Every statement is `IF NOT EXISTS`, so on a database those starts made this
 * migration changes nothing and only records itself: an install upgrades with its clients and
 * sign-ins. The `ALTER TABLE` brings tables made before `unused_expires_at` to the same point.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE TABLE IF NOT EXISTS oauth_clients (
    client_id text PRIMARY KEY,
    secret_hash text,
    token_endpoint_auth_method text NOT NULL,
    redirect_uris text[] NOT NULL,
    client_name text,
    metadata jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    unused_expires_at timestamptz
  )`,
  // Clients registered before unused registrations expired keep null: kept, as they were.
  `ALTER TABLE oauth_clients ADD COLUMN IF NOT EXISTS unused_expires_at timestamptz`,
  `CREATE TABLE IF NOT EXISTS oauth_pending (
    id text PRIMARY KEY,
    csrf_hash text NOT NULL,
    client_id text NOT NULL,
    client_name text,
    client_verified boolean NOT NULL,
    redirect_uri text NOT NULL,
    state text,
    code_challenge text NOT NULL,
    scopes text[] NOT NULL,
    resource text NOT NULL,
    failed_attempts integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS oauth_codes (
    hash text PRIMARY KEY,
    grant_id text NOT NULL UNIQUE,
    client_id text NOT NULL,
    redirect_uri text NOT NULL,
    code_challenge text NOT NULL,
    account_id text NOT NULL,
    api_key_id text,
    scopes text[] NOT NULL,
    resource text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    redeemed_at timestamptz
  )`,
  `CREATE TABLE IF NOT EXISTS oauth_grants (
    id text PRIMARY KEY,
    client_id text NOT NULL,
    account_id text NOT NULL,
    api_key_id text,
    scopes text[] NOT NULL,
    resource text NOT NULL,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
  )`,
  `CREATE TABLE IF NOT EXISTS oauth_tokens (
    hash text PRIMARY KEY,
    kind text NOT NULL CHECK (kind IN ('access', 'refresh')),
    grant_id text NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    scopes text[] NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    rotated_at timestamptz
  )`,
  `CREATE INDEX IF NOT EXISTS oauth_tokens_grant ON oauth_tokens (grant_id)`,
  `CREATE TABLE IF NOT EXISTS oauth_signin_codes (
    hash text PRIMARY KEY,
    account_id text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at timestamptz
  )`,
  `CREATE TABLE IF NOT EXISTS oauth_registration_counts (
    bucket text NOT NULL,
    window_start timestamptz NOT NULL,
    window_end timestamptz NOT NULL,
    count integer NOT NULL,
    PRIMARY KEY (bucket, window_start)
  )`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
