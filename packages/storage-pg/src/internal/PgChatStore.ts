/**
 * The chat storage port on PostgreSQL: `open` and `settle` are one call each of the functions
 * of migration 0005 (checks and writes in one transaction under the account's row lock);
 * `sweepStale` settles the stale open requests one by one through the same function, so a
 * request settled meanwhile by its own server is left as that server wrote it. Leases: one call
 * each of the functions of migration 0017; `settleLeased` sends its whole batch as one JSON value.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { PgTypes } from "@effect/sql-pg"
import { ChatStore, Money } from "@taskmeter/kernel"
import type { ChatPrices, Ids } from "@taskmeter/kernel"
import * as Failures from "./Failures.ts"
import { toRefusal } from "./Rows.ts"

type Int8 = bigint | number

interface ChatRow {
  readonly id: string
  readonly account_id: string
  readonly model: string
  readonly status: string
  readonly reserved_micros: Int8
  readonly charged_micros: Int8 | null
  readonly prompt_tokens: Int8 | null
  readonly completion_tokens: Int8 | null
  readonly finish_reason: string | null
  readonly error_code: string | null
  readonly tiers: ReadonlyArray<ChatPrices.ChatPriceTier>
  readonly created_at: Date
  readonly completed_at: Date | null
}

const columns = [
  "id",
  "account_id",
  "model",
  "status",
  "reserved_micros",
  "charged_micros",
  "prompt_tokens",
  "completion_tokens",
  "finish_reason",
  "error_code",
  "tiers",
  "created_at",
  "completed_at"
] as const

const select = (alias: string): string => columns.map((column) => `${alias}.${column}`).join(", ")

const toRecord = (row: ChatRow): ChatStore.ChatRequestRecord => ({
  id: row.id as Ids.ChatRequestId,
  model: row.model,
  status: row.status as ChatStore.ChatRequestRecord["status"],
  reservedMicros: Money.micros(Number(row.reserved_micros)),
  chargedMicros: row.charged_micros === null ? null : Money.micros(Number(row.charged_micros)),
  usage:
    row.prompt_tokens === null || row.completion_tokens === null
      ? null
      : { promptTokens: Number(row.prompt_tokens), completionTokens: Number(row.completion_tokens) },
  finishReason: row.finish_reason,
  errorCode: row.error_code,
  createdAt: row.created_at,
  completedAt: row.completed_at
})

interface OpenRow extends ChatRow {
  readonly outcome: ChatStore.OpenResult["_tag"]
  readonly detail: Int8 | null
}

interface SettleRow extends ChatRow {
  readonly written: boolean
}

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  const settle = (s: ChatStore.ChatSettlement) =>
    sql<SettleRow>`SELECT s.written, ${sql.literal(select("(s.request)"))}
      FROM taskmeter_chat_settle(
        ${s.id}, ${s.status}, ${s.usage?.promptTokens ?? null}::bigint, ${s.usage?.completionTokens ?? null}::bigint,
        ${s.finishReason}::text, ${s.errorCode}::text, ${s.chargeMicros}::bigint, ${s.completedAt}
      ) s`

  return ChatStore.ChatStore.of({
    open: (request, limits) =>
      Failures.run(
        "open chat request",
        sql<OpenRow>`SELECT o.outcome, o.detail, ${sql.literal(select("(o.request)"))}
          FROM taskmeter_chat_open(
            ${request.id}, ${request.accountId}, ${request.apiKeyId}::text, ${request.model},
            ${request.reservedMicros}::bigint, ${PgTypes.jsonb(request.tiers)}, ${request.createdAt},
            ${limits.requestsPerMinute}::integer, ${limits.maxOpenRequests}::integer, ${limits.keyUsageLimit}::integer
          ) o`
      ).pipe(
        Effect.map((rows): ChatStore.OpenResult => {
          const row = rows[0]!
          switch (row.outcome) {
            case "Opened":
              return { _tag: "Opened", record: toRecord(row) }
            default:
              return toRefusal(row.outcome, row.detail)
          }
        })
      ),

    find: (id) =>
      Failures.run(
        "find chat request",
        sql<ChatRow>`SELECT ${sql.literal(select("c"))} FROM chat_requests c WHERE c.id = ${id}`
      ).pipe(
        Effect.map((rows) => {
          const row = rows[0]
          return row === undefined
            ? undefined
            : { record: toRecord(row), accountId: row.account_id as Ids.AccountId, tiers: row.tiers }
        })
      ),

    settle: (s) =>
      Failures.run(
        "settle chat request",
        (s.upstream ?? null) === null && (s.shortfallMicros ?? 0) === 0
          ? settle(s)
          : sql.withTransaction(
              Effect.tap(settle(s), (rows) =>
                rows[0]?.written === true
                  ? Effect.asVoid(
                      sql`UPDATE chat_requests SET upstream = ${s.upstream ?? null}::text,
                          upstream_cost_micros = ${s.upstreamCostMicros ?? null}::bigint,
                          shortfall_micros = ${s.shortfallMicros ?? 0}::bigint
                        WHERE id = ${s.id}`
                    )
                  : Effect.void
              )
            )
      ).pipe(Effect.map((rows) => (rows[0] === undefined ? undefined : toRecord(rows[0])))),

    get: (accountId, id) =>
      Failures.run(
        "get chat request",
        sql<ChatRow>`SELECT ${sql.literal(select("c"))} FROM chat_requests c
          WHERE c.id = ${id} AND c.account_id = ${accountId}`
      ).pipe(Effect.map((rows) => (rows[0] === undefined ? undefined : toRecord(rows[0])))),

    list: (accountId, page) =>
      Failures.run(
        "list chat requests",
        Effect.gen(function* () {
          let beforeSeq: Int8 | null = null
          if (page.before !== undefined) {
            const cursor = yield* sql<{ readonly seq: Int8 }>`SELECT seq FROM chat_requests
              WHERE id = ${page.before} AND account_id = ${accountId}`
            if (cursor.length === 0) return undefined
            beforeSeq = cursor[0]!.seq
          }
          // One statement per case, so that a generic plan also bounds the index scan by the cursor.
          const rows =
            beforeSeq === null
              ? yield* sql<ChatRow>`SELECT ${sql.literal(select("c"))} FROM chat_requests c
                WHERE c.account_id = ${accountId}
                ORDER BY c.seq DESC LIMIT ${page.limit + 1}`
              : yield* sql<ChatRow>`SELECT ${sql.literal(select("c"))} FROM chat_requests c
                WHERE c.account_id = ${accountId} AND c.seq < ${beforeSeq}::bigint
                ORDER BY c.seq DESC LIMIT ${page.limit + 1}`
          const requests = rows.slice(0, page.limit).map(toRecord)
          const last = requests[requests.length - 1]
          return { requests, nextCursor: rows.length > page.limit && last !== undefined ? last.id : null }
        })
      ),

    sweepStale: (openedBefore, now) =>
      Failures.run(
        "sweep stale chat requests",
        Effect.gen(function* () {
          const stale = yield* sql<{ readonly id: string }>`SELECT id FROM chat_requests
            WHERE status = 'open' AND created_at < ${openedBefore} ORDER BY seq`
          let swept = 0
          for (const { id } of stale) {
            const rows = yield* settle({
              id: id as Ids.ChatRequestId,
              status: "failed",
              usage: null,
              finishReason: null,
              errorCode: ChatStore.ABANDONED,
              chargeMicros: Money.ZERO,
              completedAt: now
            })
            if (rows[0]?.written === true) swept++
          }
          return swept
        })
      ),

    lease: (request) =>
      Failures.run(
        "lease chat credit",
        sql<{ readonly outcome: ChatStore.LeaseResult["_tag"]; readonly detail: Int8 | null }>`SELECT o.outcome, o.detail
          FROM taskmeter_chat_lease(
            ${request.id}, ${request.accountId}, ${request.needMicros}::bigint, ${request.wantMicros}::bigint,
            ${request.at}, ${request.expiresAt}
          ) o`
      ).pipe(
        Effect.map((rows): ChatStore.LeaseResult => {
          const row = rows[0]!
          switch (row.outcome) {
            case "Leased":
              return { _tag: "Leased", grantedMicros: Money.micros(Number(row.detail)) }
            case "LeaseClosed":
              return { _tag: "LeaseClosed" }
            case "PaymentReviewRequired":
              return { _tag: "PaymentReviewRequired" }
            default:
              return { _tag: "InsufficientCredits", availableMicros: Number(row.detail) }
          }
        })
      ),

    renewLeases: (ids, expiresAt) =>
      Failures.run(
        "renew chat leases",
        sql<{ readonly id: string }>`UPDATE chat_leases SET expires_at = ${expiresAt}
          WHERE id IN (SELECT id FROM chat_leases WHERE id = ANY (${ids}::text[]) AND closed_at IS NULL
            ORDER BY id FOR UPDATE)
          RETURNING id`
      ).pipe(Effect.map((rows) => rows.map((row) => row.id))),

    settleLeased: (settlements) =>
      Failures.run(
        "settle leased chat requests",
        sql`SELECT taskmeter_chat_settle_leased(${PgTypes.jsonb(
          settlements.map((s) => ({
            id: s.id,
            lease_id: s.leaseId,
            account_id: s.accountId,
            api_key_id: s.apiKeyId,
            model: s.model,
            reserved_micros: s.reservedMicros,
            tiers: s.tiers,
            created_at: s.createdAt.toISOString(),
            status: s.status,
            prompt_tokens: s.usage?.promptTokens ?? null,
            completion_tokens: s.usage?.completionTokens ?? null,
            finish_reason: s.finishReason,
            error_code: s.errorCode,
            charge_micros: s.chargeMicros,
            completed_at: s.completedAt.toISOString(),
            upstream: s.upstream ?? null,
            upstream_cost_micros: s.upstreamCostMicros ?? null,
            shortfall_micros: s.shortfallMicros ?? 0
          }))
        )})`
      ).pipe(Effect.asVoid),

    margin: (range) =>
      Failures.run(
        "chat margin",
        sql<{
          readonly model: string
          readonly upstream: string | null
          readonly requests: Int8
          readonly charged: Int8
          readonly cost: Int8
          readonly shortfall: Int8
        }>`SELECT c.model, c.upstream, count(*) AS requests, coalesce(sum(c.charged_micros), 0) AS charged,
            coalesce(sum(c.upstream_cost_micros), 0) AS cost, sum(c.shortfall_micros) AS shortfall
          FROM chat_requests c
          WHERE c.created_at >= ${range.from} AND c.created_at < ${range.to} AND c.status <> 'open'
          GROUP BY c.model, c.upstream
          ORDER BY c.model COLLATE "C", c.upstream COLLATE "C" NULLS FIRST
          LIMIT ${ChatStore.MARGIN_ROWS}`
      ).pipe(
        Effect.map((rows) =>
          rows.map((row) => ({
            model: row.model,
            upstream: row.upstream,
            requests: Number(row.requests),
            chargedMicros: Money.micros(Number(row.charged)),
            upstreamCostMicros: Money.micros(Number(row.cost)),
            shortfallMicros: Money.micros(Number(row.shortfall))
          }))
        )
      ),

    revenue: (range) =>
      Effect.all(
        {
          rows: sql<{
            readonly day: string
            readonly model: string | null
            readonly tasks_charged: Int8
            readonly task_charged: Int8
            readonly tasks_released: Int8
            readonly task_released: Int8
            readonly chat_requests: Int8
            readonly chat_charged: Int8
            readonly chat_cost: Int8
            readonly chat_shortfall: Int8
          }>`WITH t AS (
              SELECT to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, e.model,
                count(*) FILTER (WHERE e.kind = 'charge') AS tasks_charged,
                coalesce(sum(e.amount_micros) FILTER (WHERE e.kind = 'charge'), 0) AS task_charged,
                count(*) FILTER (WHERE e.kind = 'release') AS tasks_released,
                coalesce(sum(e.amount_micros) FILTER (WHERE e.kind = 'release'), 0) AS task_released
              FROM (
                SELECT created_at, kind, amount_micros, (SELECT k.model FROM tasks k WHERE k.id = task_id) AS model
                FROM ledger_entries
                WHERE created_at >= ${range.from} AND created_at < ${range.to}
                  AND kind IN ('charge', 'release') AND task_id IS NOT NULL
              ) e
              GROUP BY 1, 2
            ), c AS (
              SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, model,
                count(*) AS chat_requests, coalesce(sum(charged_micros), 0) AS chat_charged,
                coalesce(sum(upstream_cost_micros), 0) AS chat_cost, sum(shortfall_micros) AS chat_shortfall
              FROM chat_requests
              WHERE created_at >= ${range.from} AND created_at < ${range.to} AND status <> 'open'
              GROUP BY 1, 2
            )
            SELECT day, model, coalesce(t.tasks_charged, 0) AS tasks_charged, coalesce(t.task_charged, 0) AS task_charged,
              coalesce(t.tasks_released, 0) AS tasks_released, coalesce(t.task_released, 0) AS task_released,
              coalesce(c.chat_requests, 0) AS chat_requests, coalesce(c.chat_charged, 0) AS chat_charged,
              coalesce(c.chat_cost, 0) AS chat_cost, coalesce(c.chat_shortfall, 0) AS chat_shortfall
            FROM t FULL JOIN c USING (day, model)
            ORDER BY day, model COLLATE "C" NULLS FIRST
            LIMIT ${ChatStore.REVENUE_ROWS}`,
          refunds: sql<{ readonly day: string; readonly refunds: Int8; readonly refunded: Int8 }>`SELECT
              to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*) AS refunds, sum(amount_micros) AS refunded
            FROM ledger_entries
            WHERE created_at >= ${range.from} AND created_at < ${range.to} AND kind = 'refund'
            GROUP BY 1 ORDER BY 1`
        },
        { concurrency: 1 }
      ).pipe(
        Effect.map(({ refunds, rows }) => ({
          rows: rows.map((row) => ({
            day: row.day,
            model: row.model,
            tasksCharged: Number(row.tasks_charged),
            taskChargedMicros: Money.micros(Number(row.task_charged)),
            tasksReleased: Number(row.tasks_released),
            taskReleasedMicros: Money.micros(Number(row.task_released)),
            chatRequests: Number(row.chat_requests),
            chatChargedMicros: Money.micros(Number(row.chat_charged)),
            chatUpstreamCostMicros: Money.micros(Number(row.chat_cost)),
            chatShortfallMicros: Money.micros(Number(row.chat_shortfall))
          })),
          refunds: refunds.map((row) => ({
            day: row.day,
            refunds: Number(row.refunds),
            refundedMicros: Money.micros(Number(row.refunded))
          }))
        })),
        (effect) => Failures.run("revenue", effect)
      ),

    closeLeases: (ids, at) =>
      Failures.run(
        "close chat leases",
        sql<{ readonly id: string }>`SELECT id FROM taskmeter_chat_close_leases(${ids}::text[], ${at}, NULL) id`
      ).pipe(Effect.map((rows) => rows.length)),

    sweepLeases: (now) =>
      Failures.run(
        "sweep expired chat leases",
        sql<{ readonly id: string }>`SELECT id FROM taskmeter_chat_close_leases(
            ARRAY(SELECT id FROM chat_leases WHERE closed_at IS NULL AND expires_at < ${now} ORDER BY expires_at LIMIT 1000),
            ${now}, ${now}
          ) id`
      ).pipe(Effect.map((rows) => rows.length))
  })
})
