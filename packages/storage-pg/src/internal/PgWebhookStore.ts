/**
 * WebhookStore on PostgreSQL (migration 0022). Deliveries are inserted by the task store's
 * moving statement (PgTaskStore) and the payment store's applying one (migration 0034), not here.
 * `claim` is one UPDATE over a `FOR UPDATE SKIP LOCKED` pick from the partial index of pending
 * deliveries by due time, setting the due time to the lease's end; `record` one statement appending the attempt, moving the delivery on its lease
 * token and marking the endpoint failing or not (written only when that changes, so a busy
 * endpoint's row is not a hot spot) and the finish time (migration 0029), which `purgeFinished`
 * reads through its partial index.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { Ids, PaymentWebhook, TaskStore } from "@taskmeter/kernel"
import { WebhookStore } from "@taskmeter/kernel"
import type { WebhookEvent } from "@taskmeter/kernel"
import * as Failures from "./Failures.ts"
import { toTask } from "./Rows.ts"
import type { TaskRow } from "./Rows.ts"

interface EndpointRow {
  readonly id: string
  readonly account_id: string
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly enabled: boolean
  readonly disabled_reason: string | null
  readonly secret: string
  readonly previous_secret: string | null
  readonly previous_secret_expires_at: Date | null
  readonly failing_since: Date | null
  readonly created_at: Date
  readonly updated_at: Date
}

interface AttemptJson {
  readonly at: string
  readonly status_code: number | null
  readonly latency_ms: number
  readonly response_excerpt: string | null
  readonly error: string | null
}

interface DeliveryRow {
  readonly id: string
  readonly account_id: string
  readonly endpoint_id: string | null
  readonly url: string
  readonly task_id: string | null
  readonly payment_id: string | null
  readonly event_type: string
  readonly occurred_at: Date
  readonly status: string
  readonly next_attempt_at: Date | null
  readonly created_at: Date
  readonly attempts: ReadonlyArray<AttemptJson>
}

/** PaymentWebhook.PaymentData as the payment store wrote it (migration 0034). */
interface PaymentJson {
  readonly id: string
  readonly processor: string
  readonly amountMicros: number
  readonly refundedMicros: number
  readonly heldMicros: number
  readonly createdAt: string
  readonly dispute: PaymentWebhook.DisputeData | null
  readonly ledgerEntryIds: ReadonlyArray<string>
}

interface ClaimRow extends DeliveryRow {
  readonly task: Record<string, unknown> | null
  readonly payment: PaymentJson | null
  readonly lease_token: string
  readonly round_attempts: number
  readonly endpoint_enabled: boolean | null
  readonly secret: string | null
  readonly previous_secret: string | null
  readonly previous_secret_expires_at: Date | null
  readonly account_secret: string | null
}

const toEndpoint = (row: EndpointRow): WebhookStore.Endpoint => ({
  id: row.id,
  accountId: row.account_id as Ids.AccountId,
  url: row.url,
  events: row.events as ReadonlyArray<WebhookEvent.EventType>,
  enabled: row.enabled,
  disabledReason: row.disabled_reason,
  secret: row.secret,
  previousSecret: row.previous_secret,
  previousSecretExpiresAt: row.previous_secret_expires_at,
  failingSince: row.failing_since,
  createdAt: row.created_at,
  updatedAt: row.updated_at
})

const toDelivery = (row: DeliveryRow): WebhookStore.Delivery => ({
  id: row.id,
  accountId: row.account_id as Ids.AccountId,
  endpointId: row.endpoint_id,
  url: row.url,
  taskId: row.task_id as Ids.TaskId | null,
  paymentId: row.payment_id,
  type: row.event_type as WebhookEvent.EventType,
  occurredAt: row.occurred_at,
  status: row.status as WebhookStore.DeliveryStatus,
  attempts: row.attempts.map((a) => ({
    at: new Date(a.at),
    statusCode: a.status_code,
    latencyMs: a.latency_ms,
    responseExcerpt: a.response_excerpt,
    error: a.error
  })),
  nextAttemptAt: row.next_attempt_at,
  createdAt: row.created_at
})

const dateColumns = ["created_at", "updated_at", "deadline_at", "lease_expires_at", "cancel_requested_at"] as const

/** The task row kept as JSON with the delivery (`to_jsonb` of a settled row) as a TaskRecord. */
const taskOfJson = (json: Record<string, unknown>): TaskStore.TaskRecord => {
  const row: Record<string, unknown> = { ...json }
  for (const column of dateColumns) row[column] = typeof json[column] === "string" ? new Date(json[column]) : null
  return toTask(row as unknown as TaskRow)
}

const paymentOfJson = (json: PaymentJson): PaymentWebhook.PaymentData => ({
  ...json,
  amountMicros: Number(json.amountMicros),
  refundedMicros: Number(json.refundedMicros),
  heldMicros: Number(json.heldMicros),
  createdAt: new Date(json.createdAt)
})

const deliveryColumns = `w.id, w.account_id, w.endpoint_id, w.url, w.task_id, w.payment_id, w.event_type, w.occurred_at, w.status,
  w.next_attempt_at, w.created_at,
  coalesce((SELECT json_agg(json_build_object('at', a.at, 'status_code', a.status_code, 'latency_ms', a.latency_ms,
    'response_excerpt', a.response_excerpt, 'error', a.error) ORDER BY a.n)
    FROM webhook_attempts a WHERE a.delivery_id = w.id), '[]'::json) AS attempts`

const MAX_ERROR = 1000

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const columns = sql.literal(deliveryColumns)

  const endpoint = (what: string, query: Effect.Effect<ReadonlyArray<EndpointRow>, SqlError>) =>
    Failures.run(
      what,
      Effect.map(query, (rows) => (rows.length === 0 ? undefined : toEndpoint(rows[0])))
    )

  return WebhookStore.WebhookStore.of({
    createEndpoint: (e) =>
      Effect.map(
        endpoint(
          "createEndpoint",
          sql<EndpointRow>`INSERT INTO webhook_endpoints (id, account_id, url, events, secret, created_at, updated_at)
            VALUES (${e.id}, ${e.accountId}, ${e.url}, ${e.events}::text[], ${e.secret}, ${e.now}, ${e.now}) RETURNING *`
        ),
        (created) => created as WebhookStore.Endpoint
      ),

    listEndpoints: (accountId) =>
      Failures.run(
        "listEndpoints",
        sql<EndpointRow>`SELECT * FROM webhook_endpoints WHERE account_id = ${accountId} ORDER BY created_at, id`.pipe(
          Effect.map((rows) => rows.map(toEndpoint))
        )
      ),

    getEndpoint: (accountId, id) =>
      endpoint("getEndpoint", sql<EndpointRow>`SELECT * FROM webhook_endpoints WHERE id = ${id} AND account_id = ${accountId}`),

    updateEndpoint: (accountId, id, patch) =>
      endpoint(
        "updateEndpoint",
        sql<EndpointRow>`UPDATE webhook_endpoints SET
            url = coalesce(${patch.url ?? null}, url),
            events = coalesce(${patch.events ?? null}::text[], events),
            enabled = coalesce(${patch.enabled ?? null}::boolean, enabled),
            disabled_reason = CASE ${patch.enabled ?? null}::boolean WHEN true THEN NULL
              WHEN false THEN ${patch.disabledReason ?? null} ELSE disabled_reason END,
            failing_since = CASE WHEN ${patch.enabled ?? null}::boolean THEN NULL ELSE failing_since END,
            updated_at = ${patch.now}
          WHERE id = ${id} AND account_id = ${accountId} RETURNING *`
      ),

    rotateSecret: (accountId, id, rotation) =>
      endpoint(
        "rotateSecret",
        sql<EndpointRow>`UPDATE webhook_endpoints SET secret = ${rotation.secret}, previous_secret = secret,
            previous_secret_expires_at = ${rotation.previousExpiresAt}, updated_at = ${rotation.now}
          WHERE id = ${id} AND account_id = ${accountId} RETURNING *`
      ),

    deleteEndpoint: (accountId, id) =>
      Failures.run(
        "deleteEndpoint",
        sql`DELETE FROM webhook_endpoints WHERE id = ${id} AND account_id = ${accountId} RETURNING id`.pipe(
          Effect.map((rows) => rows.length > 0)
        )
      ),

    accountSecret: (accountId, candidate, now) =>
      Failures.run(
        "accountSecret",
        // DO UPDATE (a no-op on the kept row) so that a row a concurrent caller committed after this
        // statement's snapshot is still returned: DO NOTHING would return nothing, and a read here
        // would not see it.
        sql<{ readonly secret: string }>`INSERT INTO webhook_signing_secrets (account_id, secret, created_at)
          VALUES (${accountId}, ${candidate}, ${now})
          ON CONFLICT (account_id) DO UPDATE SET account_id = EXCLUDED.account_id RETURNING secret`.pipe(
          Effect.map((rows) => rows[0]?.secret ?? candidate)
        )
      ),

    claim: ({ limit, leaseMs, now }) =>
      limit <= 0
        ? Effect.succeed([])
        : Failures.run(
            "claim",
            sql<ClaimRow>`WITH picked AS (
                SELECT id FROM webhook_deliveries
                WHERE status = 'pending' AND due_at <= ${now}
                ORDER BY due_at, seq
                LIMIT ${limit}
                FOR UPDATE SKIP LOCKED
              ),
              w AS (
                UPDATE webhook_deliveries d SET lease_token = gen_random_uuid()::text,
                  due_at = ${new Date(now.getTime() + leaseMs)}
                FROM picked WHERE d.id = picked.id
                RETURNING d.*
              )
              SELECT ${columns}, w.task, w.payment, w.lease_token, w.round_attempts, e.enabled AS endpoint_enabled, e.secret,
                e.previous_secret, e.previous_secret_expires_at, s.secret AS account_secret
              FROM w
              LEFT JOIN webhook_endpoints e ON e.id = w.endpoint_id
              LEFT JOIN webhook_signing_secrets s ON w.endpoint_id IS NULL AND s.account_id = w.account_id`.pipe(
              Effect.map((rows) =>
                rows.map(
                  (row): WebhookStore.DeliveryClaim => ({
                    delivery: toDelivery(row),
                    task: row.task === null ? null : taskOfJson(row.task),
                    payment: row.payment === null ? null : paymentOfJson(row.payment),
                    leaseToken: row.lease_token,
                    attemptNumber: row.round_attempts + 1,
                    secrets:
                      row.endpoint_id === null
                        ? row.account_secret === null
                          ? []
                          : [row.account_secret]
                        : [
                            ...(row.secret === null ? [] : [row.secret]),
                            ...(row.previous_secret !== null &&
                            row.previous_secret_expires_at !== null &&
                            row.previous_secret_expires_at.getTime() > now.getTime()
                              ? [row.previous_secret]
                              : [])
                          ],
                    endpointEnabled: row.endpoint_id === null || row.endpoint_enabled === true
                  })
                )
              )
            )
          ),

    recordRound: (records, now) => {
      const input = records.map(({ deliveryId, leaseToken, attempt, outcome }, ord) => ({
        id: deliveryId,
        lease_token: leaseToken,
        status: outcome._tag === "Delivered" ? "delivered" : outcome._tag === "Failed" ? "failed" : "pending",
        retry_at: outcome._tag === "Retry" ? outcome.at.toISOString() : null,
        has_attempt: attempt !== undefined,
        at: (attempt?.at ?? now).toISOString(),
        status_code: attempt?.statusCode ?? null,
        latency_ms: Math.round(attempt?.latencyMs ?? 0),
        excerpt: attempt?.responseExcerpt?.slice(0, WebhookStore.MAX_EXCERPT) ?? null,
        error: attempt?.error?.slice(0, MAX_ERROR) ?? null,
        ord
      }))
      return Failures.run(
        "recordRound",
        sql<{ readonly recorded: boolean; readonly failing_since: Date | null }>`WITH i AS (
            SELECT * FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb) AS i(id text, lease_token text, status text,
              retry_at timestamptz, has_attempt boolean, at timestamptz, status_code integer, latency_ms integer,
              excerpt text, error text, ord integer)
          ),
          d AS (
            UPDATE webhook_deliveries w SET lease_token = NULL, status = i.status, due_at = i.retry_at,
              finished_at = CASE WHEN i.status = 'pending' THEN NULL ELSE ${now}::timestamptz END,
              next_attempt_at = i.retry_at, round_attempts = w.round_attempts + CASE WHEN i.has_attempt THEN 1 ELSE 0 END
            FROM i
            WHERE w.id = i.id AND w.lease_token = i.lease_token AND w.status = 'pending'
            RETURNING w.id, w.endpoint_id
          ),
          a AS (
            INSERT INTO webhook_attempts (delivery_id, at, status_code, latency_ms, response_excerpt, error)
            SELECT i.id, i.at, i.status_code, i.latency_ms, i.excerpt, i.error
            FROM i JOIN d ON d.id = i.id WHERE i.has_attempt ORDER BY i.ord
          ),
          latest AS (
            SELECT DISTINCT ON (d.endpoint_id) d.endpoint_id, i.status = 'delivered' AS delivered
            FROM d JOIN i ON i.id = d.id
            WHERE d.endpoint_id IS NOT NULL AND i.has_attempt
            ORDER BY d.endpoint_id, i.at + i.latency_ms * interval '1 millisecond' DESC, (i.status = 'delivered') DESC
          ),
          e AS (
            UPDATE webhook_endpoints e SET failing_since = CASE WHEN l.delivered THEN NULL ELSE ${now}::timestamptz END
            FROM latest l
            WHERE e.id = l.endpoint_id
              AND (CASE WHEN l.delivered THEN e.failing_since IS NOT NULL ELSE e.failing_since IS NULL END)
            RETURNING e.id, e.failing_since
          )
          SELECT d.id IS NOT NULL AS recorded,
            CASE WHEN d.id IS NULL OR l.delivered THEN NULL ELSE coalesce(e.failing_since, x.failing_since) END AS failing_since
          FROM i LEFT JOIN d ON d.id = i.id
            LEFT JOIN latest l ON l.endpoint_id = d.endpoint_id
            LEFT JOIN e ON e.id = d.endpoint_id
            LEFT JOIN webhook_endpoints x ON x.id = d.endpoint_id
          ORDER BY i.ord`.pipe(
          Effect.map((rows) =>
            rows.map((row) => ({ recorded: row.recorded === true, endpointFailingSince: row.failing_since ?? null }))
          )
        )
      )
    },

    disableFailing: (endpointId, failingSince, reason, now) =>
      endpoint(
        "disableFailing",
        sql<EndpointRow>`UPDATE webhook_endpoints SET enabled = false, disabled_reason = ${reason}, updated_at = ${now}
          WHERE id = ${endpointId} AND enabled AND failing_since <= ${failingSince} RETURNING *`
      ),

    listDeliveries: (accountId, endpointId, limit, before) =>
      Failures.run(
        "listDeliveries",
        Effect.gen(function* () {
          const owner = yield* sql`SELECT 1 FROM webhook_endpoints WHERE id = ${endpointId} AND account_id = ${accountId}`
          if (owner.length === 0) return undefined
          const rows = yield* sql<DeliveryRow>`SELECT ${columns} FROM webhook_deliveries w
            WHERE w.endpoint_id = ${endpointId}
            ${
              before === undefined
                ? sql``
                : sql`AND w.seq < coalesce((SELECT c.seq FROM webhook_deliveries c
                    WHERE c.id = ${before} AND c.endpoint_id = ${endpointId}), 0)`
            }
            ORDER BY w.seq DESC LIMIT ${limit}`
          return rows.map(toDelivery)
        })
      ),

    listTaskDeliveries: (accountId, taskId, limit, before) =>
      Failures.run(
        "listTaskDeliveries",
        sql<DeliveryRow>`SELECT ${columns} FROM webhook_deliveries w
          WHERE w.task_id = ${taskId} AND w.account_id = ${accountId}
          ${
            before === undefined
              ? sql``
              : sql`AND w.seq < coalesce((SELECT c.seq FROM webhook_deliveries c
                  WHERE c.id = ${before} AND c.task_id = ${taskId}), 0)`
          }
          ORDER BY w.seq DESC LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map(toDelivery)))
      ),

    purgeFinished: (finishedBefore, limit) =>
      limit <= 0
        ? Effect.succeed(0)
        : Failures.run(
            "purgeFinished",
            sql`DELETE FROM webhook_deliveries WHERE id = ANY(ARRAY(
                SELECT id FROM webhook_deliveries
                WHERE finished_at IS NOT NULL AND finished_at < ${finishedBefore}
                ORDER BY finished_at
                LIMIT ${limit}
                FOR UPDATE SKIP LOCKED
              )) RETURNING id`.pipe(Effect.map((rows) => rows.length))
          ),

    resend: (accountId, deliveryId, now) =>
      Failures.run(
        "resend",
        sql<DeliveryRow>`WITH w AS (
            UPDATE webhook_deliveries SET status = 'pending', due_at = ${now}, next_attempt_at = ${now},
              lease_token = NULL, round_attempts = 0, finished_at = NULL
            WHERE id = ${deliveryId} AND account_id = ${accountId} RETURNING *
          )
          SELECT ${columns} FROM w`.pipe(Effect.map((rows) => (rows.length === 0 ? undefined : toDelivery(rows[0]))))
      )
  })
})
