/**
 * Webhooks: an account's endpoints (`webhook_endpoints`, with the previous secret during a
 * rotation's overlap), its signing secret for per-submission URLs (`webhook_signing_secrets`),
 * a submission's own webhook (`task_webhooks`, written before the admission, so unknown task ids
 * are possible and harmless), and the shared delivery queue (`webhook_deliveries`, written by
 * the settling statement itself; claimed through the partial index of pending rows by due time,
 * which while claimed is the lease's end) with its attempts log (`webhook_attempts`).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const events = `ARRAY['task.succeeded', 'task.failed', 'task.reconciliation_required']::text[]`

const statements = [
  `CREATE TABLE webhook_endpoints (
    id text PRIMARY KEY CHECK (id LIKE 'whep\\_%'),
    account_id text NOT NULL REFERENCES accounts (id),
    url text NOT NULL CHECK (length(url) BETWEEN 1 AND 2000),
    events text[] NOT NULL CHECK (cardinality(events) > 0 AND events <@ ${events}),
    enabled boolean NOT NULL DEFAULT true,
    disabled_reason text CHECK (length(disabled_reason) <= 1000),
    secret text NOT NULL,
    previous_secret text,
    previous_secret_expires_at timestamptz,
    failing_since timestamptz,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    CHECK ((previous_secret IS NULL) = (previous_secret_expires_at IS NULL))
  )`,
  `CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, created_at, id)`,
  `CREATE TABLE webhook_signing_secrets (
    account_id text PRIMARY KEY REFERENCES accounts (id),
    secret text NOT NULL,
    created_at timestamptz NOT NULL
  )`,
  `CREATE TABLE task_webhooks (
    task_id text PRIMARY KEY,
    url text NOT NULL CHECK (length(url) BETWEEN 1 AND 2000),
    events text[] CHECK (events <@ ${events})
  )`,
  `CREATE TABLE webhook_deliveries (
    id text PRIMARY KEY,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    account_id text NOT NULL,
    endpoint_id text REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    url text NOT NULL,
    task_id text NOT NULL,
    event_type text NOT NULL CHECK (event_type = ANY (${events})),
    task jsonb NOT NULL,
    occurred_at timestamptz NOT NULL,
    status text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    due_at timestamptz,
    next_attempt_at timestamptz,
    lease_token text,
    round_attempts integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL,
    CHECK ((status = 'pending') = (due_at IS NOT NULL))
  )`,
  `CREATE INDEX webhook_deliveries_due ON webhook_deliveries (due_at, seq) WHERE status = 'pending'`,
  `CREATE INDEX webhook_deliveries_endpoint_newest ON webhook_deliveries (endpoint_id, seq DESC)`,
  `CREATE TABLE webhook_attempts (
    delivery_id text NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    n bigint GENERATED ALWAYS AS IDENTITY,
    at timestamptz NOT NULL,
    status_code integer,
    latency_ms integer NOT NULL,
    response_excerpt text CHECK (length(response_excerpt) <= 1024),
    error text CHECK (length(error) <= 1000),
    PRIMARY KEY (delivery_id, n)
  )`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
