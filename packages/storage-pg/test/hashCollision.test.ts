/**
 * Two accounts whose ids share a hash (migration 0042): every per-account statement ranges over
 * `hashtextextended(account_id, 0)`, so here a function of that name that hashes every id to 0
 * is put ahead of pg_catalog on the search_path, and the stores must still answer each account
 * exactly its own tasks and ledger entries, full pages while there are more, and cursors that
 * page through them all once.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import type { Ids } from "@taskmeter/kernel"
import { LedgerStore, TaskStore } from "@taskmeter/kernel"
import { PgStore } from "../src/index.ts"
import { dropSchemaAfter, schemaName, url } from "./TestDatabase.ts"

const A = "acct_a" as Ids.AccountId
const B = "acct_b" as Ids.AccountId

/** The stores in a fresh schema whose own `hashtextextended` hashes every id to 0. */
const colliding = Effect.gen(function* () {
  const schema = schemaName()
  yield* Layer.build(dropSchemaAfter(schema))
  const client = PgClient.layerFrom(
    PgClient.make({ url: Redacted.make(url), maxConnections: 2, startupParameters: { search_path: `"${schema}", pg_catalog` } })
  )
  const context = yield* Layer.build(PgStore.layerClient({ schema }).pipe(Layer.provideMerge(client)))
  yield* SqlClient.SqlClient.use((sql) =>
    Effect.gen(function* () {
      yield* sql`CREATE FUNCTION ${sql(schema)}.hashtextextended(text, bigint) RETURNS bigint
        LANGUAGE sql IMMUTABLE AS 'SELECT 0::bigint'`
      yield* sql`INSERT INTO accounts (id, name, created_at) VALUES (${A}, 'a', now()), (${B}, 'b', now())`
    })
  ).pipe(Effect.provide(context))
  return context
})

/** Owners in time order: acct_b has two rows for each of acct_a's, interleaved. */
const owners = Array.from({ length: 60 }, (_, n) => (n % 3 === 1 ? A : B))
const newestFirstOf = (prefix: string, account: string) =>
  owners.flatMap((owner, n) => (owner === account ? [`${prefix}${String(n).padStart(3, "0")}`] : [])).reverse()

describe("two accounts whose ids share a hash", () => {
  it.live("each lists exactly its own tasks, page after page", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const context = yield* colliding
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const [{ same }] = yield* sql<{
            readonly same: boolean
          }>`SELECT hashtextextended(${A}, 0) = hashtextextended(${B}, 0) AS same`
          expect(same).toBe(true)
          for (const [n, owner] of owners.entries()) {
            yield* sql`INSERT INTO tasks (id, account_id, model, input, status, price_micros, unit_micros, quantity, settlement,
                created_at, updated_at, deadline_at)
              VALUES (${`task_${String(n).padStart(3, "0")}`}, ${owner}, 'plans', '{}', 'failed', 1, 1, 1, 'fixed',
                now() - ${60 - n} * interval '1 second', now(), now())`
          }
          const store = yield* TaskStore.TaskStore
          for (const [account, filter] of [
            [A, {}],
            [A, { status: "failed" as const }],
            [A, { model: "plans" }],
            [B, {}]
          ] as const) {
            const seen: Array<string> = []
            let before: Ids.TaskId | undefined
            for (;;) {
              const page = yield* store.list(account, 7, { ...filter, before })
              expect(page.every((task) => task.accountId === account)).toBe(true)
              seen.push(...page.map((task) => task.id))
              if (page.length < 7) break
              before = page[page.length - 1]!.id
            }
            expect(seen).toEqual(newestFirstOf("task_", account))
          }
        }).pipe(Effect.provide(context))
      })
    )
  )

  it.live("each pages through exactly its own ledger entries, the cursor ending with them", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const context = yield* colliding
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          for (const [n, owner] of owners.entries()) {
            yield* sql`INSERT INTO ledger_entries (id, account_id, kind, amount_micros, note, created_at)
              VALUES (${`entry_${String(n).padStart(3, "0")}`}, ${owner}, 'grant', 1, 'collision', now())`
          }
          const ledger = yield* LedgerStore.LedgerStore
          for (const account of [A, B]) {
            const seen: Array<string> = []
            let before: string | undefined
            for (;;) {
              const page = yield* ledger.entries(account, { limit: 4, before })
              expect(page).toBeDefined()
              expect(page!.entries.every((entry) => entry.accountId === account)).toBe(true)
              seen.push(...page!.entries.map((entry) => entry.id))
              if (page!.nextCursor === null) break
              expect(page!.entries).toHaveLength(4)
              before = page!.nextCursor
            }
            expect(seen).toEqual(newestFirstOf("entry_", account))
          }
          // The other account's entry as a cursor is still refused.
          expect(yield* ledger.entries(A, { limit: 4, before: "entry_000" })).toBeUndefined()
        }).pipe(Effect.provide(context))
      })
    )
  )
})
