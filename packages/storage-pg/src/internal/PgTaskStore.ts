/**
 * Tasks on PostgreSQL, each method one statement: `admit` one call of `taskmeter_admit_requests`
 * (migration 0012) per batch, callers' and keys' requests alike; `claim` an UPDATE over a `FOR UPDATE
 * SKIP LOCKED` pick with fresh lease tokens; `purgeIdempotencyKeys` a DELETE of the oldest expired
 * keys, also SKIP LOCKED; transitions one data-modifying statement per batch that compare-and-sets
 * each task and writes its credit effect, the legal moves passed in from TaskStatus.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { PgTypes } from "@effect/sql-pg"
import { TaskErrorCode, TaskStatus, TaskStore, WebhookEvent } from "@taskmeter/kernel"
import * as AccountRows from "./AccountRows.ts"
import * as Batcher from "./Batcher.ts"
import * as Failures from "./Failures.ts"
import type { TaskRow } from "./Rows.ts"
import {
  prefixedApiKeyColumns,
  prefixedApiKeyRow,
  taskColumns as taskColumnList,
  toAuthenticated,
  toRefusal,
  toTask
} from "./Rows.ts"
import type { StatusWakeups, WorkWakeups } from "./Wakeups.ts"

type Int8 = bigint | number

/** An admission's row: a key's count (`key_` columns), and the admission if it was judged. */
interface AdmitRow extends TaskRow {
  readonly ordinal: number
  readonly outcome: TaskStore.AdmissionResult["_tag"] | null
  readonly detail: Int8 | null
  readonly window_started: Date | null
  readonly window_requests: number | null
  readonly [column: `key_${string}`]: unknown
}

interface TransitionRow extends TaskRow {
  readonly ordinal: number
}

/** One compare-and-set as the batch statement reads it from JSON. */
interface Move {
  readonly ordinal: number
  readonly task_id: string
  readonly lease_token: string | null
  readonly check_lease: boolean
  readonly from_status: TaskStatus.TaskStatus
  readonly to_status: TaskStatus.TaskStatus
  readonly at: string
  readonly set_error_code: boolean
  readonly error_code: string | null
  readonly upstream_ref: string | null
  readonly provider: string | null
  readonly upstream_answer: string | null
  readonly note: string | null
  readonly assets: ReadonlyArray<TaskStore.StoredAsset> | null
  readonly charge_micros: number | null
  readonly keep_lease: boolean
  readonly credit_effect: TaskStatus.CreditEffect
  readonly finishes: boolean
}

/** The statuses whose entry raises a webhook event (WebhookEvent.eventOf). */
const eventStatuses = TaskStatus.TaskStatus.literals
  .filter((status) => WebhookEvent.eventOf(status) !== undefined)
  .map((status) => `'${status}'`)
  .join(", ")

/** What a submission's own webhook without a list of events receives (WebhookEvent.defaultEvents). */
const defaultEvents = `ARRAY[${WebhookEvent.defaultEvents.map((type) => `'${type}'`).join(", ")}]::text[]`

const unfinished = TaskStatus.TaskStatus.literals.filter(TaskStatus.isUnfinished)
const unfinishedList = unfinished.map((status) => `'${status}'`).join(", ")

const move = (
  ordinal: number,
  request: {
    readonly taskId: string
    readonly leaseToken: string | null
    readonly from: TaskStatus.TaskStatus
    readonly to: TaskStatus.TaskStatus
    readonly now: Date
    readonly errorCode?: string | null | undefined
    readonly upstreamRef?: string | undefined
    readonly provider?: string | undefined
    readonly upstreamAnswer?: string | undefined
    readonly note?: string | undefined
    readonly assets?: ReadonlyArray<TaskStore.StoredAsset> | undefined
    readonly chargeMicros?: number | undefined
    readonly keepLease: boolean
  }
): Move => {
  const creditEffect = TaskStatus.creditEffectOf(request.to)
  if (creditEffect === "charge" && request.chargeMicros === undefined) {
    throw new Error(`A move of ${request.taskId} to ${request.to} needs chargeMicros`)
  }
  return {
    ordinal,
    task_id: request.taskId,
    lease_token: request.leaseToken,
    check_lease: request.leaseToken !== null,
    from_status: request.from,
    to_status: request.to,
    at: request.now.toISOString(),
    set_error_code: request.errorCode !== undefined,
    error_code: request.errorCode ?? null,
    upstream_ref: request.upstreamRef ?? null,
    provider: request.provider ?? null,
    upstream_answer:
      request.to === "reconciliation_required" && request.upstreamAnswer !== undefined
        ? request.upstreamAnswer.slice(0, TaskStore.MAX_UPSTREAM_ANSWER)
        : null,
    note: request.note ?? null,
    assets: request.assets ?? null,
    charge_micros: creditEffect === "charge" ? (request.chargeMicros ?? null) : null,
    keep_lease: request.keepLease,
    credit_effect: creditEffect,
    finishes: TaskStatus.isUnfinished(request.from) && !TaskStatus.isUnfinished(request.to)
  }
}

/** Splits moves so that no batch names a task twice; later moves of a task run after earlier ones. */
const rounds = (moves: ReadonlyArray<Move>): ReadonlyArray<ReadonlyArray<Move>> => {
  const result: Array<Array<Move>> = []
  const seen = new Map<string, number>()
  for (const item of moves) {
    const round = seen.get(item.task_id) ?? 0
    seen.set(item.task_id, round + 1)
    ;(result[round] ??= []).push(item)
  }
  return result
}

/**
 * Admission batches written at once, how many of them may hold one account or one key, and
 * their largest size (see Batcher).
 */
const ADMISSION_BATCHES = 8
const ADMISSION_BATCHES_PER_ACCOUNT = 2
const ADMISSION_BATCHES_PER_KEY = 1
const MAX_ADMISSION_BATCH = 100

/** An admission as `taskmeter_admit_requests` reads it; ordinals are 1-based positions. */
const admissionJson = (request: TaskStore.AnyAdmissionRequest, index: number) => ({
  ordinal: index + 1,
  ...(TaskStore.isKeyed(request)
    ? {
        key_hash: request.key.hash,
        now: request.key.now.toISOString(),
        scope: request.key.scope,
        default_rate_limit: request.key.defaultRateLimitPerMinute
      }
    : {
        account_id: request.task.accountId,
        api_key_id: request.task.apiKeyId,
        key_usage_limit: request.limits.keyUsageLimit
      }),
  task_id: request.task.id,
  model: request.task.model,
  input: request.task.input,
  price_micros: request.task.priceMicros,
  unit_micros: request.task.unitMicros,
  quantity: request.task.quantity,
  settlement: request.task.settlement,
  created_at: request.task.createdAt.toISOString(),
  deadline_at: request.task.deadlineAt.toISOString(),
  idempotency_key: request.idempotencyKey,
  fingerprint: request.fingerprint,
  idempotency_expires_at: request.idempotencyExpiresAt.toISOString(),
  submissions_per_minute: request.limits.submissionsPerMinute,
  max_unfinished_tasks: request.limits.maxUnfinishedTasks,
  traceparent: keptTraceparent(request.task.traceparent)
})

/** The column's own check (migration 0013): a context it would refuse is dropped, not the admission. */
const W3C_TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/

const keptTraceparent = (traceparent: string | undefined) =>
  traceparent !== undefined && W3C_TRACEPARENT.test(traceparent) ? traceparent : undefined

/**
 * Batches by account (a caller's request) or by key (a key's): requests of one key share its
 * window row, so one batch per key at a time lets the rest gather.
 */
const batchKey = (request: TaskStore.AnyAdmissionRequest) =>
  TaskStore.isKeyed(request) ? `key ${request.key.hash}` : `account ${request.task.accountId}`

const batchesPerKey = (key: string) => (key.startsWith("key ") ? ADMISSION_BATCHES_PER_KEY : ADMISSION_BATCHES_PER_ACCOUNT)

const toAdmissionResult = (
  row: AdmitRow & { readonly outcome: TaskStore.AdmissionResult["_tag"] }
): TaskStore.AdmissionResult => {
  switch (row.outcome) {
    case "Admitted":
    case "Replayed":
      return { _tag: row.outcome, task: toTask(row) }
    case "IdempotencyConflict":
      return { _tag: "IdempotencyConflict", taskId: row.id as TaskStore.TaskRecord["id"] }
    default:
      return toRefusal(row.outcome, row.detail)
  }
}

/**
 * A page of an account's tasks, newest first, with only the filters given, so that each plan is a
 * range of one index read backward (migrations 0019, 0038, 0040, 0042): tasks_account_newest, with
 * ?status=succeeded checked on its rows; tasks_account_status_newest for failed and
 * reconciliation_required; tasks_unfinished (the whole backlog, the account and status checked on
 * its rows) for queued, submitting and running; tasks_account_model_newest for ?model=. Each
 * partial index's statuses are spelled out, so that a generic plan may use it.
 */
export const listPage = (sql: SqlClient.SqlClient, accountId: string, limit: number, filter: TaskStore.TaskListFilter) =>
  sql<TaskRow>`SELECT ${sql.literal(taskColumnList("t"))} FROM tasks t WHERE ${AccountRows.hashOf(sql, "t.account_id", accountId)}
    ${
      filter.status === undefined
        ? sql``
        : filter.status === "succeeded"
          ? sql`AND t.status = 'succeeded'`
          : TaskStatus.isUnfinished(filter.status)
            ? sql`AND t.status = ${filter.status} AND t.status IN ('queued', 'submitting', 'running')`
            : sql`AND t.status = ${filter.status} AND t.status IN ('failed', 'reconciliation_required')`
    }
    ${filter.model === undefined ? sql`` : sql`AND t.model = ${filter.model}`}
    ${filter.createdAfter === undefined ? sql`` : sql`AND t.created_at > ${filter.createdAfter}`}
    ${filter.createdBefore === undefined ? sql`` : sql`AND t.created_at < ${filter.createdBefore}`}
    ${
      filter.before === undefined
        ? sql``
        : sql`AND (t.created_at, t.seq) < (SELECT c.created_at, c.seq FROM tasks c
            WHERE c.id = ${filter.before} AND c.account_id = ${accountId})`
    }
    ORDER BY t.created_at DESC, t.seq DESC LIMIT ${limit}`

/**
 * A page of the tasks in `status` after `afterId` (id order): one statement with the cursor and
 * one without, so that a generic plan bounds the index scan by the cursor rather than filtering.
 * The status as a literal (one of TaskStatus's), so the plan can use the partial index of
 * reconciliation_required.
 */
export const statusPage = (
  sql: SqlClient.SqlClient,
  status: TaskStatus.TaskStatus,
  afterId: string | undefined,
  limit: number
) => {
  const columns = sql.literal(taskColumnList("t"))
  const literal = sql.literal(`'${TaskStatus.TaskStatus.literals.find((known) => known === status)}'`)
  return afterId === undefined
    ? sql<TaskRow>`SELECT ${columns} FROM tasks t WHERE t.status = ${literal}
        ORDER BY t.id COLLATE "C" LIMIT ${limit}`
    : sql<TaskRow>`SELECT ${columns} FROM tasks t WHERE t.status = ${literal} AND t.id COLLATE "C" > ${afterId}::text
        ORDER BY t.id COLLATE "C" LIMIT ${limit}`
}

/** The held tasks' page (reconciliation_required, with the upstream's answer), as `statusPage`. */
export const heldPage = (sql: SqlClient.SqlClient, afterId: string | undefined, limit: number) => {
  const columns = sql.literal(taskColumnList("t"))
  return afterId === undefined
    ? sql<TaskRow & { readonly upstream_answer: string | null }>`SELECT ${columns}, t.upstream_answer FROM tasks t
        WHERE t.status = 'reconciliation_required'
        ORDER BY t.id COLLATE "C" LIMIT ${limit}`
    : sql<TaskRow & { readonly upstream_answer: string | null }>`SELECT ${columns}, t.upstream_answer FROM tasks t
        WHERE t.status = 'reconciliation_required' AND t.id COLLATE "C" > ${afterId}::text
        ORDER BY t.id COLLATE "C" LIMIT ${limit}`
}

export const make = (wakeups: WorkWakeups, statuses: StatusWakeups, holdStream: TaskStore.TaskStore["Service"]["holdStream"]) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const taskColumns = sql.literal(taskColumnList("t"))

    const applyMoves = (moves: ReadonlyArray<Move>) =>
      sql<TransitionRow>`WITH input AS (
          SELECT * FROM jsonb_to_recordset(${PgTypes.jsonb(moves)}) AS i(
            ordinal integer, task_id text, lease_token text, check_lease boolean, from_status text,
            to_status text, at timestamptz, set_error_code boolean, error_code text, upstream_ref text,
            provider text, upstream_answer text, note text, assets jsonb, charge_micros bigint, keep_lease boolean, credit_effect text, finishes boolean
          )
        ),
        done AS (
          UPDATE tasks t SET
            status = i.to_status,
            updated_at = i.at,
            error_code = CASE WHEN i.set_error_code THEN i.error_code ELSE t.error_code END,
            upstream_ref = coalesce(i.upstream_ref, t.upstream_ref),
            provider = coalesce(i.provider, t.provider),
            upstream_answer = coalesce(i.upstream_answer, t.upstream_answer),
            assets = coalesce(i.assets, t.assets),
            charged_micros = CASE WHEN i.credit_effect = 'charge' THEN i.charge_micros ELSE t.charged_micros END,
            lease_token = CASE WHEN i.keep_lease THEN t.lease_token END,
            lease_owner = CASE WHEN i.keep_lease THEN t.lease_owner END,
            lease_expires_at = CASE WHEN i.keep_lease THEN t.lease_expires_at END
          FROM input i
          WHERE t.id = i.task_id
            AND t.status = i.from_status
            AND (NOT i.check_lease OR t.lease_token = i.lease_token)
          RETURNING ${taskColumns}, i.ordinal, i.credit_effect, i.finishes, i.note
        ),
        settled AS (
          SELECT account_id,
            sum(CASE WHEN credit_effect = 'charge' THEN charged_micros ELSE 0 END)::bigint AS charged,
            sum(CASE WHEN credit_effect IN ('charge', 'release') THEN price_micros ELSE 0 END)::bigint AS unreserved,
            count(*) FILTER (WHERE finishes)::integer AS finished
          FROM done
          GROUP BY account_id
        ),
        moved AS (
          UPDATE accounts a SET
            balance_micros = a.balance_micros - s.charged,
            reserved_micros = a.reserved_micros - s.unreserved,
            unfinished_tasks = a.unfinished_tasks - s.finished
          FROM settled s
          WHERE a.id = s.account_id AND (s.charged <> 0 OR s.unreserved <> 0 OR s.finished <> 0)
        ),
        journal AS (
          INSERT INTO ledger_entries (id, account_id, kind, amount_micros, task_id, note, created_at)
          SELECT 'entry_' || taskmeter_uuidv7(), d.account_id, m.kind, m.amount, d.id, d.note, d.updated_at
          FROM done d
          CROSS JOIN LATERAL (VALUES
            ('charge', d.charged_micros),
            ('release', d.price_micros - coalesce(d.charged_micros, 0))
          ) AS m(kind, amount)
          WHERE (d.credit_effect = 'charge' AND (m.kind = 'charge' OR m.amount > 0))
             OR (d.credit_effect = 'release' AND m.kind = 'release')
        ),
        outbox AS (
          -- The webhook deliveries the moves raise, in this same statement (migration 0022; task.running
          -- only to those who subscribe to it, migration 0034).
          INSERT INTO webhook_deliveries (id, account_id, endpoint_id, url, task_id, event_type, task, occurred_at,
            status, due_at, next_attempt_at, created_at)
          SELECT 'msg_' || gen_random_uuid(), d.account_id, h.endpoint_id, h.url, d.id, 'task.' || d.status,
            to_jsonb(d), d.updated_at, 'pending', d.updated_at, d.updated_at, d.updated_at
          FROM done d
          CROSS JOIN LATERAL (
            SELECT e.id AS endpoint_id, e.url FROM webhook_endpoints e
              WHERE e.account_id = d.account_id AND e.enabled AND 'task.' || d.status = ANY (e.events)
            UNION ALL
            SELECT NULL, w.url FROM task_webhooks w
              WHERE w.task_id = d.id AND 'task.' || d.status = ANY (coalesce(w.events, ${sql.literal(defaultEvents)}))
          ) h
          WHERE d.status IN (${sql.literal(eventStatuses)})
        )
        SELECT * FROM done`

    /** Runs the moves and answers each in order: the task after the write, or undefined when its CAS failed. */
    const runMoves = (moves: ReadonlyArray<Move>) =>
      Effect.gen(function* () {
        const written = new Map<number, TaskStore.TaskRecord>()
        for (const batch of rounds(moves)) {
          for (const row of yield* applyMoves(batch)) written.set(row.ordinal, toTask(row))
        }
        if (moves.some((m) => written.has(m.ordinal) && !m.keep_lease && TaskStatus.isUnfinished(m.to_status))) {
          yield* wakeups.announce
        }
        const moved = moves.filter((m) => written.has(m.ordinal))
        if (moved.length > 0) yield* statuses.announce(moved.map((m) => ({ taskId: m.task_id, status: m.to_status })))
        return moves.map((m) => written.get(m.ordinal))
      })

    const transitionAll = (requests: ReadonlyArray<TaskStore.TransitionRequest>) =>
      Effect.gen(function* () {
        const moves: Array<Move> = []
        const results: Array<TaskStore.TransitionResult | number> = requests.map((request, index) => {
          if (!TaskStatus.canTransition(request.from, request.to)) {
            return { _tag: "IllegalTransition", from: request.from, to: request.to }
          }
          moves.push(move(index, request))
          return index
        })
        if (moves.length === 0) return results as ReadonlyArray<TaskStore.TransitionResult>
        const written = yield* runMoves(moves)
        const byOrdinal = new Map(moves.map((m, i) => [m.ordinal, written[i]]))
        return results.map((result): TaskStore.TransitionResult => {
          if (typeof result !== "number") return result
          const task = byOrdinal.get(result)
          return task === undefined ? { _tag: "LeaseLost" } : { _tag: "Done", task }
        })
      })

    /** The answers, after waking idle workers when a task was admitted. */
    const announcedIf = <A>(admitted: boolean, answers: A) =>
      admitted ? Effect.as(wakeups.announce, answers) : Effect.succeed(answers)

    /**
     * Keeps the submissions' own webhooks under their new task ids before the admission, so a
     * task never settles before its webhook is known; ids that are not admitted name no task.
     */
    const keepWebhooks = (requests: ReadonlyArray<TaskStore.AnyAdmissionRequest>) => {
      const hooks = requests.flatMap(({ task }) =>
        task.webhook === undefined ? [] : [{ task_id: task.id, url: task.webhook.url, events: task.webhook.events }]
      )
      return hooks.length === 0
        ? Effect.void
        : Failures.run(
            "keep webhooks",
            Effect.asVoid(sql`INSERT INTO task_webhooks (task_id, url, events)
              SELECT v.task_id, v.url, (SELECT array_agg(x) FROM jsonb_array_elements_text(v.events) x)
              FROM jsonb_to_recordset(${PgTypes.jsonb(hooks)}) AS v(task_id text, url text, events jsonb)
              ON CONFLICT (task_id) DO NOTHING`)
          )
    }

    /** Each request's answer: a caller's AdmissionResult, a key's KeyedAdmission. */
    const admitBatch = (requests: ReadonlyArray<TaskStore.AnyAdmissionRequest>) =>
      Effect.andThen(keepWebhooks(requests), admitRequests(requests))

    const admitRequests = (requests: ReadonlyArray<TaskStore.AnyAdmissionRequest>) =>
      Failures.run(
        "admit",
        sql<AdmitRow>`SELECT b.ordinal, ${sql.literal(prefixedApiKeyColumns("(b.key)", "key_"))},
            b.window_started, b.window_requests, b.outcome, b.detail, ${sql.literal(taskColumnList("(b.task)"))}
          FROM taskmeter_admit_requests(${PgTypes.jsonb(requests.map(admissionJson))}) b`
      ).pipe(
        Effect.flatMap((rows) => {
          const byOrdinal = new Map(rows.map((row) => [row.ordinal, row]))
          let admitted = false
          const answers = requests.map((request, index): TaskStore.Admission<TaskStore.AnyAdmissionRequest> => {
            const row = byOrdinal.get(index + 1)
            const admission = row?.outcome == null ? undefined : toAdmissionResult({ ...row, outcome: row.outcome })
            admitted ||= admission?._tag === "Admitted"
            if (!TaskStore.isKeyed(request)) {
              if (admission === undefined) throw new Error(`taskmeter_admit_requests did not judge admission ${index + 1}`)
              return admission
            }
            return {
              authenticated:
                row?.window_started == null
                  ? undefined
                  : toAuthenticated(prefixedApiKeyRow(row, "key_"), row.window_started, row.window_requests as number),
              admission
            }
          })
          return announcedIf(admitted, answers)
        })
      )

    const admit = yield* Batcher.make({
      key: batchKey,
      maxBatch: MAX_ADMISSION_BATCH,
      concurrency: ADMISSION_BATCHES,
      perKey: batchesPerKey,
      run: admitBatch
    })

    return TaskStore.TaskStore.of({
      admit: admit as TaskStore.TaskStore["Service"]["admit"],

      findIdempotent: (accountId, idempotencyKey, now) =>
        Failures.run(
          "findIdempotent",
          // By the key's primary key; the same liveness test as taskmeter_admit's.
          sql<TaskRow & { readonly request_fingerprint: string }>`SELECT k.request_fingerprint, ${taskColumns}
            FROM idempotency_keys k JOIN tasks t ON t.id = k.task_id
            WHERE k.account_id = ${accountId} AND k.idempotency_key = ${idempotencyKey} AND k.expires_at > ${now}`.pipe(
            Effect.map((rows) =>
              rows.length === 0 ? undefined : { task: toTask(rows[0]), fingerprint: rows[0].request_fingerprint }
            )
          )
        ),

      takeChore: ({ name, holder, now, leaseMs, everyMs }) =>
        Failures.run(
          "takeChore",
          sql<{ readonly name: string }>`INSERT INTO chores AS c (name, holder, lease_until, taken_at)
            VALUES (${name}, ${holder}, ${new Date(now.getTime() + leaseMs)}, ${now})
            ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, lease_until = EXCLUDED.lease_until, taken_at = EXCLUDED.taken_at
            WHERE (c.lease_until IS NULL OR c.lease_until <= ${now}) AND c.taken_at <= ${new Date(now.getTime() - everyMs)}
            RETURNING c.name`.pipe(Effect.map((rows) => rows.length === 1))
        ),

      freeChore: ({ name, holder }) =>
        Failures.run(
          "freeChore",
          Effect.asVoid(sql`UPDATE chores SET holder = NULL, lease_until = NULL WHERE name = ${name} AND holder = ${holder}`)
        ),

      purgeIdempotencyKeys: (expiredBefore, limit) =>
        limit < 1
          ? Effect.succeed(0)
          : Failures.run(
              "purgeIdempotencyKeys",
              // The oldest expired keys through idempotency_keys_expires_at (migration 0008), deleted
              // by ctid in the same statement. SKIP LOCKED passes over keys another purge holds, and
              // over a key an admission is renewing; the outer expiry test keeps the promise that a
              // live key is never deleted on its own, whatever the pick saw.
              sql<{ readonly deleted: number }>`WITH purged AS (
              DELETE FROM idempotency_keys k
              WHERE k.ctid = ANY(ARRAY(
                  SELECT p.ctid FROM idempotency_keys p
                  WHERE p.expires_at <= ${expiredBefore}
                  ORDER BY p.expires_at
                  LIMIT ${limit}
                  FOR UPDATE SKIP LOCKED
                ))
                AND k.expires_at <= ${expiredBefore}
              RETURNING 1
            )
            SELECT count(*)::integer AS deleted FROM purged`.pipe(Effect.map((rows) => rows[0]?.deleted ?? 0))
            ),

      get: (accountId, taskId) =>
        Failures.run(
          "get",
          // By primary key alone, the owner checked here: see migration 0001 on plans.
          sql<TaskRow>`SELECT ${taskColumns} FROM tasks t WHERE t.id = ${taskId}`.pipe(
            Effect.map((rows) => (rows.length === 0 || rows[0].account_id !== accountId ? undefined : toTask(rows[0])))
          )
        ),

      list: (accountId, limit, filter = {}) =>
        Failures.run(
          "list",
          AccountRows.ownRows(accountId, limit, (asked) => listPage(sql, accountId, asked, filter)).pipe(
            Effect.map((rows) => rows.map(toTask))
          )
        ),

      claim: (options) =>
        options.limit <= 0
          ? Effect.succeed([])
          : Effect.flatMap(wakeups.claimStarted, () =>
              Failures.run(
                "claim",
                sql<TaskRow & { readonly seq: Int8 }>`WITH picked AS (
                SELECT id FROM tasks
                WHERE status IN (${sql.literal(unfinishedList)})
                  AND (lease_expires_at IS NULL OR lease_expires_at <= ${options.now})
                  AND (${options.models ?? null}::text[] IS NULL OR model = ANY(${options.models ?? null}::text[]))
                ORDER BY created_at, seq
                LIMIT ${options.limit}
                FOR UPDATE SKIP LOCKED
              )
              UPDATE tasks t SET
                lease_token = gen_random_uuid()::text,
                lease_owner = ${options.workerId},
                lease_expires_at = ${new Date(options.now.getTime() + options.leaseMs)},
                attempts = t.attempts + 1
              FROM picked
              WHERE t.id = picked.id
              RETURNING ${taskColumns}, t.seq`
              ).pipe(
                Effect.map((rows) =>
                  [...rows]
                    .sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || Number(a.seq) - Number(b.seq))
                    .map(
                      (row): TaskStore.Claim => ({
                        task: toTask(row),
                        leaseToken: row.lease_token as string,
                        leaseExpiresAt: row.lease_expires_at as Date
                      })
                    )
                )
              )
            ),

      renew: (taskId, leaseToken, until) =>
        Failures.run(
          "renew",
          sql`UPDATE tasks SET lease_expires_at = ${until}
            WHERE id = ${taskId} AND lease_token = ${leaseToken} RETURNING id`.pipe(Effect.map((rows) => rows.length > 0))
        ),

      transition: (request) =>
        Failures.run(
          "transition",
          Effect.map(transitionAll([request]), (results) => results[0])
        ),

      transitionAll: (requests) => Failures.run("transitionAll", transitionAll(requests)),

      listByStatus: (status, limit, afterId) =>
        Failures.run("listByStatus", statusPage(sql, status, afterId, limit).pipe(Effect.map((rows) => rows.map(toTask)))),

      takeSlots: (request) =>
        request.lanes.length === 0
          ? Effect.succeed(true)
          : Failures.run(
              "takeSlots",
              sql<{ readonly taken: boolean }>`SELECT taskmeter_take_slots(
                ${request.taskId}, ${request.leaseToken}, ${request.lanes.map((l) => l.lane)}::text[],
                ${request.lanes.map((l) => l.limit)}::integer[], ${request.now}
              ) AS taken`.pipe(Effect.map((rows) => rows[0]?.taken === true))
            ),

      releaseSlots: ({ taskId, leaseToken, lanes }) =>
        lanes.length === 0
          ? Effect.void
          : Failures.run(
              "releaseSlots",
              Effect.asVoid(sql`UPDATE upstream_slots SET task_id = NULL, lease_token = NULL
                WHERE lane = ANY(${lanes}::text[]) AND task_id = ${taskId} AND lease_token = ${leaseToken}`)
            ),
      listHeld: (limit, afterId) =>
        Failures.run(
          "listHeld",
          heldPage(sql, afterId, limit).pipe(
            Effect.map((rows) => rows.map((row) => ({ task: toTask(row), upstreamAnswer: row.upstream_answer })))
          )
        ),

      noteUpstream: (taskId, upstreamRef) =>
        Failures.run(
          "noteUpstream",
          sql`UPDATE tasks SET upstream_ref = ${upstreamRef}
            WHERE id = ${taskId} AND upstream_ref IS NULL AND status IN ('submitting', 'reconciliation_required')
            RETURNING id`.pipe(Effect.map((rows) => rows.length > 0))
        ),

      noteProgress: (taskId, progress) =>
        Failures.run(
          "noteProgress",
          sql`UPDATE tasks SET progress = ${progress}
            WHERE id = ${taskId} AND status = 'running' AND progress IS DISTINCT FROM ${progress}
            RETURNING id`.pipe(
            Effect.flatMap((rows) =>
              rows.length > 0 ? Effect.as(statuses.announceProgress(taskId), true) : Effect.succeed(false)
            )
          )
        ),

      // Reads the task, then compare-and-sets on the status it read; statuses only move forward,
      // so a lost race reads again at most three times.
      cancel: (accountId, taskId, now) =>
        Failures.run(
          "cancel",
          Effect.gen(function* () {
            for (;;) {
              const rows = yield* sql<TaskRow>`SELECT ${taskColumns} FROM tasks t WHERE t.id = ${taskId}`
              if (rows.length === 0 || rows[0].account_id !== accountId) return undefined
              const task = toTask(rows[0])
              if (task.status === "queued") {
                const [canceled] = yield* runMoves([
                  move(0, {
                    taskId,
                    leaseToken: null,
                    from: "queued",
                    to: "failed",
                    now,
                    errorCode: TaskErrorCode.Canceled,
                    keepLease: false
                  })
                ])
                if (canceled !== undefined) return { _tag: "Canceled", task: canceled } satisfies TaskStore.CancelResult
                continue
              }
              if (!TaskStatus.isUnfinished(task.status)) return TaskStore.finishedCancel(task)
              const requested =
                yield* sql<TaskRow>`UPDATE tasks t SET cancel_requested_at = coalesce(t.cancel_requested_at, ${now})
                WHERE t.id = ${taskId} AND t.status = ${task.status} RETURNING ${taskColumns}`
              if (requested.length > 0) return { _tag: "Requested", task: toTask(requested[0]) } satisfies TaskStore.CancelResult
            }
          })
        ),

      resolve: (resolution) =>
        TaskStatus.canTransition(resolution.from ?? "reconciliation_required", resolution.to)
          ? Failures.run(
              "resolve",
              Effect.map(
                Effect.suspend(() =>
                  runMoves([
                    move(0, {
                      ...resolution,
                      leaseToken: null,
                      from: resolution.from ?? "reconciliation_required",
                      keepLease: false
                    })
                  ])
                ),
                (written) => written[0]
              )
            )
          : Effect.succeed(undefined),

      watchStatus: statuses.watch,
      holdStream,

      awaitWork: (maxWaitMs) => wakeups.await(maxWaitMs)
    })
  })
