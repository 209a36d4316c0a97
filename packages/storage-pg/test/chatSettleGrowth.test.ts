/**
 * A batch of leased chat settlements reads about as many pages with 30,000 chat requests stored as
 * with none, with its plans made on the empty tables and kept (`force_generic_plan` on the one
 * connection, as a server's connection keeps them from a new deployment on while nothing analyzes
 * the tables). It read the batch's rows back out of `chat_requests`, a sequential scan in such a plan.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { AccountStore, ChatStore, Ids, LedgerStore, Money } from "@taskmeter/kernel"
import { PgStore } from "../src/index.ts"
import { dropSchemaAfter, schemaName, url } from "./TestDatabase.ts"

const T0 = new Date("2030-01-01T00:00:00.000Z")
const LEASE = "lease_growth"
const BATCH = 30

/** Shared buffers the settlement of `BATCH` new requests (ids `prefix-1`...) touched, nested statements included. */
const settleBuffers = (accountId: string, prefix: string) =>
  SqlClient.SqlClient.use((sql) =>
    Effect.map(
      sql.unsafe<{ readonly "QUERY PLAN": ReadonlyArray<{ readonly Plan: { readonly "Shared Hit Blocks": number } }> }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT taskmeter_chat_settle_leased((
          SELECT jsonb_agg(jsonb_build_object('id', $1::text || '-' || g, 'lease_id', $2::text, 'account_id', $3::text, 'api_key_id', null,
            'model', 'chat-mini', 'reserved_micros', 1000, 'tiers', '[]'::jsonb, 'created_at', $4::timestamptz,
            'status', 'succeeded', 'prompt_tokens', 10, 'completion_tokens', 10, 'finish_reason', 'stop',
            'error_code', null, 'charge_micros', 10, 'completed_at', $4::timestamptz))
          FROM generate_series(1, ${BATCH}) g))`,
        [prefix, LEASE, accountId, T0.toISOString()]
      ),
      (rows) => rows[0]!["QUERY PLAN"][0]!.Plan["Shared Hit Blocks"]
    )
  )

describe("storage-pg on PostgreSQL: leased chat settlements as chat requests accumulate", () => {
  it.live(
    "a batch reads about as many pages with 30,000 chat requests stored as with none",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const schema = schemaName()
          yield* Layer.build(dropSchemaAfter(schema))
          const store = yield* Layer.build(PgStore.layer({ url, schema, maxConnections: 2 }))
          const sql = Context.get(store, SqlClient.SqlClient)
          // One transaction on one connection: the function's plans are those it made first, on the empty tables.
          const measured = yield* sql
            .withTransaction(
              Effect.gen(function* () {
                yield* sql`SET LOCAL plan_cache_mode = force_generic_plan`
                const account = yield* AccountStore.AccountStore.use((accounts) =>
                  accounts.createAccount({ id: Ids.makeAccountId(), name: "growth", createdAt: T0 })
                )
                yield* LedgerStore.LedgerStore.use((ledger) =>
                  ledger.grant({ accountId: account.id, amountMicros: 1_000_000_000, note: null })
                )
                const leased = yield* ChatStore.ChatStore.use((chat) =>
                  chat.lease({
                    id: LEASE,
                    accountId: account.id,
                    needMicros: Money.micros(100_000_000),
                    wantMicros: Money.micros(100_000_000),
                    at: T0,
                    expiresAt: new Date(T0.getTime() + 3_600_000)
                  })
                )
                expect(leased._tag).toBe("Leased")
                for (let i = 0; i < 6; i++) yield* settleBuffers(account.id, `warm-${i}`)
                const empty = yield* settleBuffers(account.id, "empty")
                yield* sql`INSERT INTO chat_requests (id, account_id, model, status, reserved_micros, charged_micros,
                prompt_tokens, completion_tokens, tiers, created_at, completed_at)
              SELECT 'seeded-' || g, ${account.id}, 'chat-mini', 'succeeded', 1000, 0, 10, 10, '[]', ${T0}, ${T0}
              FROM generate_series(1, 30000) g`
                const stored = yield* settleBuffers(account.id, "stored")
                const [charged] = yield* sql<{ readonly n: string }>`SELECT count(*) AS n FROM ledger_entries
              WHERE kind = 'charge' AND account_id = ${account.id}`
                return { empty, stored, charges: Number(charged!.n) }
              })
            )
            .pipe(Effect.provide(store))
          // Every settlement of the test charged once.
          expect(measured.charges).toBe(8 * BATCH)
          // About 300 more pages here (deeper indexes); reading the batch back scanned the whole heap three
          // times, about 1,700 more.
          expect(measured.stored - measured.empty).toBeLessThan(600)
        })
      ),
    120_000
  )
})
