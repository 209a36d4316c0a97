/**
 * The console's users: users (email unique without regard to case), their memberships in
 * accounts (owner or member), sessions and one-time email tokens, each found by the SHA-256 hash
 * of its secret.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE TABLE users (
    id text PRIMARY KEY,
    email text NOT NULL CHECK (email <> '' AND length(email) <= 254),
    email_verified_at timestamptz,
    password_hash text,
    operator boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL
  )`,
  `CREATE UNIQUE INDEX users_email ON users (lower(email))`,
  `CREATE TABLE account_members (
    account_id text NOT NULL REFERENCES accounts (id),
    user_id text NOT NULL REFERENCES users (id),
    role text NOT NULL CHECK (role IN ('owner', 'member')),
    created_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, account_id)
  )`,
  `CREATE INDEX account_members_account ON account_members (account_id)`,
  `CREATE TABLE sessions (
    hash text PRIMARY KEY CHECK (hash ~ '^[0-9a-f]{64}$'),
    user_id text NOT NULL REFERENCES users (id),
    account_id text NOT NULL REFERENCES accounts (id),
    created_at timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL CHECK (expires_at > created_at),
    revoked_at timestamptz
  )`,
  `CREATE INDEX sessions_live_by_user ON sessions (user_id) WHERE revoked_at IS NULL`,
  `CREATE TABLE email_tokens (
    hash text PRIMARY KEY CHECK (hash ~ '^[0-9a-f]{64}$'),
    purpose text NOT NULL CHECK (purpose IN ('verify-email', 'password-reset', 'invitation')),
    email text NOT NULL,
    user_id text REFERENCES users (id),
    account_id text REFERENCES accounts (id),
    role text CHECK (role IN ('owner', 'member')),
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL CHECK (expires_at > created_at),
    used_at timestamptz,
    CHECK ((purpose = 'invitation') = (user_id IS NULL)),
    CHECK ((account_id IS NULL) = (role IS NULL))
  )`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
