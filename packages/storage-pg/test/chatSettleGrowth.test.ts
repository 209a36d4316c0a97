/**
 * A batch of leased chat settlements reads none of the chat requests stored before it, with its
 * plans made on the empty tables and kept (`force_generic_plan` on the one connection, as a
 * server's connection keeps them from a new deployment on while nothing analyzes the tables). It
 * read the batch's rows back out of `chat_requests`, a sequential scan in such a plan.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { AccountStore, ChatStore, Ids, LedgerStore, Money } from "@taskmeter/kernel"
import { rowsRead, withKeptPlans } from "./KeptPlans.ts"

const T0 = new Date("2030-01-01T00:00:00.000Z")
const LEASE = "lease_growth"
const BATCH = 30

/** The `chat_requests` rows the settlement of `BATCH` new requests (ids `prefix-1`...) read. */
const settleReads = (accountId: string, prefix: string) =>
  SqlClient.SqlClient.use((sql) =>
    Effect.map(
      rowsRead(
        ["chat_requests"],
        sql.unsafe(
          `SELECT taskmeter_chat_settle_leased((
          SELECT jsonb_agg(jsonb_build_object('id', $1::text || '-' || g, 'lease_id', $2::text, 'account_id', $3::text, 'api_key_id', null,
            'model', 'chat-mini', 'reserved_micros', 1000, 'tiers', '[]'::jsonb, 'created_at', $4::timestamptz,
            'status', 'succeeded', 'prompt_tokens', 10, 'completion_tokens', 10, 'finish_reason', 'stop',
            'error_code', null, 'charge_micros', 10, 'completed_at', $4::timestamptz))
          FROM generate_series(1, ${BATCH}) g))`,
          [prefix, LEASE, accountId, T0.toISOString()]
        )
      ),
      ({ reads }) => reads.chat_requests
    )
  )

describe("storage-pg on PostgreSQL: leased chat settlements as chat requests accumulate", () => {
  it.live(
    "a batch reads none of the 30,000 chat requests stored before it",
    () =>
      Effect.gen(function* () {
        // The function's plans are those it made first, on the empty tables.
        const measured = yield* withKeptPlans(
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
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
            for (let i = 0; i < 6; i++) yield* settleReads(account.id, `warm-${i}`)
            const empty = yield* settleReads(account.id, "empty")
            yield* sql`INSERT INTO chat_requests (id, account_id, model, status, reserved_micros, charged_micros,
                prompt_tokens, completion_tokens, tiers, created_at, completed_at)
              SELECT 'seeded-' || g, ${account.id}, 'chat-mini', 'succeeded', 1000, 0, 10, 10, '[]', ${T0}, ${T0}
              FROM generate_series(1, 30000) g`
            const stored = yield* settleReads(account.id, "stored")
            const [charged] = yield* sql<{ readonly n: string }>`SELECT count(*) AS n FROM ledger_entries
              WHERE kind = 'charge' AND account_id = ${account.id}`
            return { empty, stored, charges: Number(charged!.n) }
          })
        )
        // Every settlement of the test charged once.
        expect(measured.charges).toBe(8 * BATCH)
        // A batch reads only its own rows (the duplicate check, the ledger's foreign key: two per request),
        // however many are stored; the read-back scanned all 30,000, three times.
        expect(measured.empty).toBeLessThanOrEqual(2 * BATCH)
        expect(measured.stored).toBeLessThanOrEqual(2 * BATCH)
      }),
    120_000
  )
})
