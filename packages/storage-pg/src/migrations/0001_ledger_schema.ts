/**
 * Accounts, API keys, tasks, the ledger journal, media and result metadata, with the invariants
 * the database can state (non-negative amounts but adjustments, one reserve, charge and release per
 * task or chat request, a charge within its reservation, foreign keys), `seq` columns for insertion
 * order, Idempotency-Keys in a table of their own keyed by (account, key), and exactly one index per
 * hot lookup. Why: docs/decisions.md, Storage; packages/storage-pg/README.md.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE TABLE accounts (
    id text PRIMARY KEY,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    name text NOT NULL,
    created_at timestamptz NOT NULL,
    balance_micros bigint NOT NULL DEFAULT 0,
    reserved_micros bigint NOT NULL DEFAULT 0 CHECK (reserved_micros >= 0),
    payment_review boolean NOT NULL DEFAULT false,
    unfinished_tasks integer NOT NULL DEFAULT 0 CHECK (unfinished_tasks >= 0),
    submissions_window_start timestamptz,
    submissions_in_window integer NOT NULL DEFAULT 0 CHECK (submissions_in_window >= 0)
  )`,
  `CREATE TABLE api_keys (
    id text PRIMARY KEY,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    account_id text NOT NULL REFERENCES accounts (id),
    name text NOT NULL,
    display_prefix text NOT NULL,
    hash text NOT NULL UNIQUE,
    scopes text[] NOT NULL,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz,
    rate_limit_per_minute integer CHECK (rate_limit_per_minute >= 0),
    usage_limit integer CHECK (usage_limit >= 0),
    usage_count integer NOT NULL DEFAULT 0 CHECK (usage_count >= 0)
  )`,
  `CREATE INDEX api_keys_account ON api_keys (account_id, seq)`,
  // The per-minute request window of a key, apart from the key row that admission updates
  // (usage_count), so that counting a request never waits for an admission's commit.
  `CREATE TABLE api_key_windows (
    api_key_id text PRIMARY KEY REFERENCES api_keys (id),
    window_start timestamptz,
    requests_in_window integer NOT NULL DEFAULT 0 CHECK (requests_in_window >= 0)
  )`,
  `CREATE TABLE tasks (
    id text PRIMARY KEY,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    account_id text NOT NULL REFERENCES accounts (id),
    api_key_id text REFERENCES api_keys (id),
    model text NOT NULL,
    input jsonb NOT NULL,
    status text NOT NULL
      CHECK (status IN ('queued', 'submitting', 'running', 'succeeded', 'failed', 'reconciliation_required')),
    error_code text,
    price_micros bigint NOT NULL CHECK (price_micros >= 0),
    unit_micros bigint NOT NULL CHECK (unit_micros >= 0),
    quantity integer NOT NULL CHECK (quantity >= 0),
    settlement text NOT NULL CHECK (settlement IN ('fixed', 'perDeliveredUnit')),
    charged_micros bigint CHECK (charged_micros >= 0 AND charged_micros <= price_micros),
    assets jsonb NOT NULL DEFAULT '[]',
    upstream_ref text,
    attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    deadline_at timestamptz NOT NULL,
    lease_token text,
    lease_owner text,
    lease_expires_at timestamptz,
    CHECK (status <> 'succeeded' OR charged_micros IS NOT NULL)
  )`,
  `CREATE INDEX tasks_account_newest ON tasks (account_id, created_at DESC, seq DESC)`,
  // The queue: unfinished tasks, oldest first.
  `CREATE INDEX tasks_unfinished ON tasks (created_at, seq) WHERE status IN ('queued', 'submitting', 'running')`,
  `CREATE TABLE idempotency_keys (
    account_id text NOT NULL REFERENCES accounts (id),
    idempotency_key text NOT NULL,
    request_fingerprint text NOT NULL,
    task_id text NOT NULL REFERENCES tasks (id),
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (account_id, idempotency_key)
  )`,
  // The reconciler's work list (listByStatus); other statuses are listed by operators only.
  `CREATE INDEX tasks_awaiting_reconciliation ON tasks (id COLLATE "C") WHERE status = 'reconciliation_required'`,
  `CREATE TABLE ledger_entries (
    id text PRIMARY KEY,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    account_id text NOT NULL REFERENCES accounts (id),
    kind text NOT NULL CHECK (kind IN ('grant', 'reserve', 'charge', 'release', 'refund', 'adjustment')),
    amount_micros bigint NOT NULL CHECK (kind = 'adjustment' OR amount_micros >= 0),
    task_id text REFERENCES tasks (id),
    chat_request_id text,
    note text,
    external_ref text,
    created_at timestamptz NOT NULL,
    CHECK (task_id IS NULL OR chat_request_id IS NULL),
    CHECK ((kind IN ('reserve', 'charge', 'release')) = (task_id IS NOT NULL OR chat_request_id IS NOT NULL))
  )`,
  `CREATE INDEX ledger_entries_account_newest ON ledger_entries (account_id, seq DESC)`,
  `CREATE UNIQUE INDEX ledger_entries_once_per_task ON ledger_entries (task_id, kind)
    WHERE task_id IS NOT NULL AND kind IN ('reserve', 'charge', 'release')`,
  `CREATE UNIQUE INDEX ledger_entries_once_per_chat_request ON ledger_entries (chat_request_id, kind)
    WHERE chat_request_id IS NOT NULL AND kind IN ('reserve', 'charge', 'release')`,
  `CREATE UNIQUE INDEX ledger_entries_external_ref ON ledger_entries (account_id, kind, external_ref)
    WHERE external_ref IS NOT NULL`,
  `CREATE TABLE media (
    reference text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id),
    content_type text NOT NULL,
    size_bytes bigint NOT NULL CHECK (size_bytes >= 0),
    sha256 text NOT NULL,
    blob_key text NOT NULL,
    created_at timestamptz NOT NULL
  )`,
  `CREATE TABLE results (
    id text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id),
    -- No foreign key to tasks: the port accepts a result for any task id (the conformance
    -- suite records results for tasks it never admitted); reads are scoped by account.
    task_id text NOT NULL,
    content_type text NOT NULL,
    size_bytes bigint NOT NULL CHECK (size_bytes >= 0),
    sha256 text NOT NULL,
    blob_key text NOT NULL,
    created_at timestamptz NOT NULL
  )`,
  `CREATE INDEX results_task ON results (task_id)`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
