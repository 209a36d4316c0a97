/**
 * The plans a long-lived server keeps: statements are prepared once per connection, and after a
 * few runs PostgreSQL may keep one generic plan, made without the values (and on a new deployment,
 * while the tables were nearly empty). The usage page's statements are checked here under
 * `plan_cache_mode = force_generic_plan` on a ledger of 200k entries, 80% in one account: each
 * still reads its page from the account's index, bounded by the cursor, not every newer entry,
 * whether planned on the 200k entries or on the empty ledger of a new deployment and kept while it
 * grew (no ANALYZE in between, so nothing invalidates the plan).
 * So are an account's lists by status over 100k tasks (succeeded from `tasks_account_newest`, reading
 * past the account's backlog; failed and held from `tasks_account_status_newest`; unfinished from
 * `tasks_unfinished`, reading past other accounts' backlog), its whole list and its list by model (from
 * `tasks_account_newest` and `tasks_account_model_newest`, keyed by the id's hash), the operator's pages of tasks by status
 * and of held tasks, and the expiry sweep's batch, which reads only due results through `results_expiring`.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import type { Ids } from "@taskmeter/kernel"
import { PgStore } from "../src/index.ts"
import { entriesPage } from "../src/internal/PgLedgerStore.ts"
import { expiringResults } from "../src/internal/PgMediaStore.ts"
import { heldPage, listPage, statusPage } from "../src/internal/PgTaskStore.ts"
import { dropSchemaAfter, schemaName, url } from "./TestDatabase.ts"

interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly "Index Cond"?: string
  readonly "Actual Rows"?: number
  readonly "Plan Rows"?: number
  readonly "Rows Removed by Filter"?: number
  readonly Plans?: ReadonlyArray<PlanNode>
}

/** A store in a schema of its own, dropped with the scope. */
const freshStore = Effect.gen(function* () {
  const schema = schemaName()
  yield* Layer.build(dropSchemaAfter(schema))
  return yield* Layer.build(PgStore.layer({ url, schema, maxConnections: 2 }))
})

const nodesOf = (node: PlanNode): ReadonlyArray<PlanNode> => [node, ...(node.Plans ?? []).flatMap(nodesOf)]

/**
 * The generic plan of `statement`, run: prepared on one connection, then explained with its own
 * values; its nodes on `relation`. With `meanwhile`, the plan is made and cached by a first run
 * before `meanwhile` runs (on the same connection), and the one explained is that cached plan.
 */
const genericPlan = (
  statement: { readonly compile: () => readonly [string, ReadonlyArray<unknown>] },
  relation = "ledger_entries",
  meanwhile?: Effect.Effect<unknown, unknown>
) =>
  SqlClient.SqlClient.use((sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const [text, params] = statement.compile()
        yield* sql`SET LOCAL plan_cache_mode = force_generic_plan`
        yield* sql.unsafe(`PREPARE usage_page AS ${text}`).unprepared
        const values = params.map((value) =>
          value instanceof Date
            ? `'${value.toISOString()}'`
            : typeof value === "string"
              ? `'${value.replaceAll("'", "''")}'`
              : String(value)
        )
        if (meanwhile !== undefined) {
          yield* sql.unsafe(`EXECUTE usage_page(${values.join(", ")})`).unprepared
          yield* meanwhile
        }
        const [row] = yield* sql.unsafe<{ readonly "QUERY PLAN": ReadonlyArray<{ readonly Plan: PlanNode }> }>(
          `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE usage_page(${values.join(", ")})`
        )
        yield* sql`DEALLOCATE usage_page`
        return nodesOf(row!["QUERY PLAN"][0]!.Plan).filter((node) => node["Relation Name"] === relation)
      })
    )
  )

describe("generic plans", () => {
  it.live("the usage page reads its entries from the account's index, with and without a cursor, on a 200k-entry ledger", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const context = yield* freshStore
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`INSERT INTO accounts (id, name, created_at)
            SELECT 'acct_' || g, 'plans', now() FROM generate_series(0, 200) g`
          // 160k entries of acct_0, 40k over 200 small accounts, interleaved as admissions would.
          yield* sql`INSERT INTO ledger_entries (id, account_id, kind, amount_micros, note, created_at)
            SELECT 'entry_' || g, CASE WHEN g % 5 = 0 THEN 'acct_' || (1 + g % 200) ELSE 'acct_0' END, 'grant', 1, 'plans', now()
            FROM generate_series(1, 200000) g`
          yield* sql`ANALYZE ledger_entries`
          const [{ seq }] = yield* sql<{ readonly seq: string | number }>`SELECT seq FROM ledger_entries WHERE id = 'entry_10001'`

          for (const beforeSeq of [null, Number(seq)]) {
            const scans = yield* genericPlan(entriesPage(sql, "acct_0", beforeSeq, 51))
            expect(scans).toHaveLength(1)
            const [scan] = scans
            expect([scan!["Node Type"], scan!["Index Name"], scan!["Actual Rows"], scan!["Rows Removed by Filter"] ?? 0]).toEqual(
              ["Index Scan", "ledger_entries_account_newest", 51, 0]
            )
            if (beforeSeq !== null) expect(scan!["Index Cond"]).toContain("seq <")
            // The index ranges over the account id's hash (the id is checked by AccountRows.ownRows).
            expect(scan!["Index Cond"]).toContain("hashtextextended(account_id")
          }
        }).pipe(Effect.provide(context))
      })
    )
  )

  it.live(
    "the usage page planned on a new deployment's empty ledger still reads the account's index once it holds 200k entries",
    () =>
      Effect.forEach([null, 10_001], (beforeSeq) =>
        Effect.scoped(
          Effect.gen(function* () {
            const context = yield* freshStore
            yield* Effect.gen(function* () {
              const sql = yield* SqlClient.SqlClient
              yield* sql`INSERT INTO accounts (id, name, created_at)
              SELECT 'acct_' || g, 'plans', now() FROM generate_series(0, 200) g`
              // An autovacuum ANALYZE of the grown ledger would invalidate the cached plan.
              yield* sql`ALTER TABLE ledger_entries SET (autovacuum_enabled = false)`
              // Planned and cached while the ledger is empty and never analyzed; then it grows as above.
              const grow = sql`INSERT INTO ledger_entries (id, account_id, kind, amount_micros, note, created_at)
              SELECT 'entry_' || g, CASE WHEN g % 5 = 0 THEN 'acct_' || (1 + g % 200) ELSE 'acct_0' END, 'grant', 1, 'plans', now()
              FROM generate_series(1, 200000) g`
              const scans = yield* genericPlan(entriesPage(sql, "acct_0", beforeSeq, 51), "ledger_entries", grow)
              expect(scans).toHaveLength(1)
              const [scan] = scans
              expect([
                scan!["Node Type"],
                scan!["Index Name"],
                scan!["Actual Rows"],
                scan!["Rows Removed by Filter"] ?? 0
              ]).toEqual(["Index Scan", "ledger_entries_account_newest", 51, 0])
              if (beforeSeq !== null) expect(scan!["Index Cond"]).toContain("seq <")
              // The plan explained is the one made on the empty ledger: it expects a few rows, not acct_0's 160k.
              expect(scan!["Plan Rows"]).toBeLessThan(10_000)
            }).pipe(Effect.provide(context))
          })
        )
      )
  )

  it.live("a list of succeeded tasks reads the account's newest tasks, past its 10k queued ones only before the first page", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const context = yield* freshStore
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`INSERT INTO accounts (id, name, created_at) VALUES ('acct_plans', 'plans', now())`
          // In time order: 90k finished (one in twelve failed), then the newest 10k still queued.
          yield* sql`INSERT INTO tasks (id, account_id, model, input, status, price_micros, unit_micros, quantity, settlement,
              charged_micros, created_at, updated_at, deadline_at)
            SELECT 'task_' || lpad(g::text, 6, '0'), 'acct_plans', 'plans', '{}', s.status, 1, 1, 1, 'fixed',
              CASE WHEN s.status = 'succeeded' THEN 1 END, t.at, t.at, t.at
            FROM generate_series(1, 100000) g
            CROSS JOIN LATERAL (SELECT now() - (100000 - g) * interval '1 second' AS at) t
            CROSS JOIN LATERAL (SELECT CASE WHEN g > 90000 THEN 'queued' WHEN g % 12 = 0 THEN 'failed' ELSE 'succeeded' END AS status) s
            ORDER BY g`
          yield* sql`ANALYZE tasks`
          for (const before of [undefined, "task_050000" as Ids.TaskId]) {
            const scans = yield* genericPlan(listPage(sql, "acct_plans", 51, { status: "succeeded", before }), "tasks")
            const page = scans.filter((node) => node["Index Name"] === "tasks_account_newest")
            expect(page).toHaveLength(1)
            expect([page[0]!["Node Type"], page[0]!["Actual Rows"]]).toEqual(["Index Scan", 51])
            // Skipped on the rows: the 10k queued before the first page, and the failed among the 56 read.
            const skipped = page[0]!["Rows Removed by Filter"] ?? 0
            expect(before === undefined ? skipped - 10_000 : skipped).toBeLessThanOrEqual(5)
          }
        }).pipe(Effect.provide(context))
      })
    )
  )

  it.live(
    "an account's list by each status but succeeded reads a partial index, with and without a cursor, over 100k tasks",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const context = yield* freshStore
          yield* Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            yield* sql`INSERT INTO accounts (id, name, created_at) VALUES ('acct_plans', 'plans', now()), ('acct_other', 'other', now())`
            // In time order: 90k finished (one in twelve failed, one in sixty held), then the newest 10k
            // unfinished (one in ten running, one in ten submitting); another account's 10k queued interleaved.
            yield* sql`INSERT INTO tasks (id, account_id, model, input, status, price_micros, unit_micros, quantity, settlement,
              charged_micros, created_at, updated_at, deadline_at)
            SELECT o.prefix || lpad(g::text, 6, '0'), o.account_id, 'plans', '{}', s.status, 1, 1, 1, 'fixed',
              CASE WHEN s.status = 'succeeded' THEN 1 END, t.at, t.at, t.at
            FROM generate_series(1, 100000) g
            CROSS JOIN LATERAL (VALUES ('task_', 'acct_plans'), ('task_o', 'acct_other')) AS o(prefix, account_id)
            CROSS JOIN LATERAL (SELECT now() - (100000 - g) * interval '1 second' AS at) t
            CROSS JOIN LATERAL (SELECT CASE
              WHEN o.account_id = 'acct_other' THEN 'queued'
              WHEN g > 90000 THEN CASE g % 10 WHEN 0 THEN 'running' WHEN 5 THEN 'submitting' ELSE 'queued' END
              WHEN g % 12 = 0 THEN 'failed' WHEN g % 60 = 30 THEN 'reconciliation_required' ELSE 'succeeded' END AS status) s
            WHERE o.account_id = 'acct_plans' OR g % 10 = 3
            ORDER BY g`
            yield* sql`ANALYZE tasks`
            // Each status with a cursor inside its tasks, its index, and the most rows it may read and skip:
            // none in the account's range of a status; in the backlog, the others' tasks among the newest.
            const cases = [
              ["queued", "task_095001", "tasks_unfinished", 100],
              ["submitting", "task_095005", "tasks_unfinished", 600],
              ["running", "task_095000", "tasks_unfinished", 600],
              ["failed", "task_048000", "tasks_account_status_newest", 0],
              ["reconciliation_required", "task_045030", "tasks_account_status_newest", 0]
            ] as const
            for (const [status, cursor, index, skippedAtMost] of cases) {
              for (const before of [undefined, cursor as Ids.TaskId]) {
                const scans = yield* genericPlan(listPage(sql, "acct_plans", 51, { status, before }), "tasks")
                const page = scans.filter((node) => node["Index Name"] === index)
                expect([status, before, page.length]).toEqual([status, before, 1])
                expect([page[0]!["Node Type"], page[0]!["Actual Rows"]]).toEqual(["Index Scan", 51])
                expect(page[0]!["Rows Removed by Filter"] ?? 0).toBeLessThanOrEqual(skippedAtMost)
                if (before !== undefined) expect(page[0]!["Index Cond"]).toContain("created_at")
              }
            }
          }).pipe(Effect.provide(context))
        })
      )
  )

  it.live("an account's whole list and its list by model each read one hashed-key range, with and without a cursor", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const context = yield* freshStore
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`INSERT INTO accounts (id, name, created_at) VALUES ('acct_plans', 'plans', now()), ('acct_other', 'other', now())`
          // In time order: 100k tasks, one in ten another account's, the account's in two models alternately.
          yield* sql`INSERT INTO tasks (id, account_id, model, input, status, price_micros, unit_micros, quantity, settlement,
              created_at, updated_at, deadline_at)
            SELECT 'task_' || lpad(g::text, 6, '0'), CASE WHEN g % 10 = 3 THEN 'acct_other' ELSE 'acct_plans' END,
              CASE WHEN g % 2 = 0 THEN 'plans' ELSE 'other' END, '{}', 'failed', 1, 1, 1, 'fixed', t.at, t.at, t.at
            FROM generate_series(1, 100000) g
            CROSS JOIN LATERAL (SELECT now() - (100000 - g) * interval '1 second' AS at) t
            ORDER BY g`
          yield* sql`ANALYZE tasks`
          const cases = [
            [{}, "tasks_account_newest"],
            [{ model: "plans" }, "tasks_account_model_newest"]
          ] as const
          for (const [filter, index] of cases) {
            for (const before of [undefined, "task_050000" as Ids.TaskId]) {
              const scans = yield* genericPlan(listPage(sql, "acct_plans", 51, { ...filter, before }), "tasks")
              const page = scans.filter((node) => node["Index Name"] === index)
              expect([index, before, page.length]).toEqual([index, before, 1])
              expect([page[0]!["Node Type"], page[0]!["Actual Rows"], page[0]!["Rows Removed by Filter"] ?? 0]).toEqual([
                "Index Scan",
                51,
                0
              ])
              expect(page[0]!["Index Cond"]).toContain("hashtextextended(account_id")
              if (before !== undefined) expect(page[0]!["Index Cond"]).toContain("created_at")
            }
          }
        }).pipe(Effect.provide(context))
      })
    )
  )

  it.live("the pages of tasks by status and of held tasks read the partial index, bounded by the cursor, over 100k tasks", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const context = yield* freshStore
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`INSERT INTO accounts (id, name, created_at) VALUES ('acct_plans', 'plans', now())`
          // One task in ten held, interleaved in id order with the others.
          yield* sql`INSERT INTO tasks (id, account_id, model, input, status, price_micros, unit_micros, quantity, settlement,
              created_at, updated_at, deadline_at)
            SELECT 'task_' || lpad(g::text, 6, '0'), 'acct_plans', 'plans', '{}',
              CASE WHEN g % 10 = 0 THEN 'reconciliation_required' ELSE 'failed' END, 1, 1, 1, 'fixed', now(), now(), now()
            FROM generate_series(1, 100000) g`
          yield* sql`ANALYZE tasks`
          for (const afterId of [undefined, "task_050000"]) {
            for (const statement of [statusPage(sql, "reconciliation_required", afterId, 51), heldPage(sql, afterId, 51)]) {
              const scans = yield* genericPlan(statement, "tasks")
              expect(scans).toHaveLength(1)
              const [scan] = scans
              expect([
                scan!["Node Type"],
                scan!["Index Name"],
                scan!["Actual Rows"],
                scan!["Rows Removed by Filter"] ?? 0
              ]).toEqual(["Index Scan", "tasks_awaiting_reconciliation", 51, 0])
              if (afterId !== undefined) expect(scan!["Index Cond"]).toContain("id")
            }
          }
        }).pipe(Effect.provide(context))
      })
    )
  )

  it.live("the expiry sweep's batch reads only due results through results_expiring, over 100k results", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const context = yield* freshStore
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`INSERT INTO accounts (id, name, created_at) VALUES ('acct_plans', 'plans', now())`
          yield* sql`INSERT INTO tasks (id, account_id, model, input, status, price_micros, unit_micros, quantity, settlement,
              created_at, updated_at, deadline_at)
            VALUES ('task_plans', 'acct_plans', 'plans', '{}', 'failed', 1, 1, 1, 'fixed', now(), now(), now())`
          // One result in ten due (expired a day ago), interleaved with those expiring in a month.
          yield* sql`INSERT INTO results (id, account_id, task_id, content_type, size_bytes, sha256, blob_key, created_at, expires_at)
            SELECT 'result_' || g, 'acct_plans', 'task_plans', 'image/png', 1, repeat('b', 64), 'results/' || g, now(),
              now() + CASE WHEN g % 10 = 0 THEN interval '-1 day' ELSE interval '30 days' END
            FROM generate_series(1, 100000) g`
          yield* sql`ANALYZE results`
          const scans = yield* genericPlan(expiringResults(sql, new Date(), 51), "results")
          const due = scans.find((node) => node["Index Name"] === "results_expiring")
          expect(due?.["Actual Rows"]).toBe(51)
          expect(due?.["Rows Removed by Filter"] ?? 0).toBe(0)
          expect(scans.some((node) => node["Node Type"] === "Seq Scan")).toBe(false)
        }).pipe(Effect.provide(context))
      })
    )
  )
})
