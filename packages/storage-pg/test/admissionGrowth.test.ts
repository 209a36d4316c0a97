/**
 * A batch of task admissions reads only its own accounts' and keys' rows, with its plans made on a
 * new deployment's nearly empty tables and kept (`force_generic_plan` on the one connection, as a
 * server's connection keeps them while nothing analyzes the tables) while accounts, keys and tasks
 * accumulate.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { rowsRead, withKeptPlans } from "./KeptPlans.ts"

const T0 = new Date("2030-01-01T00:00:00.000Z")
const BATCH = 30
/** The rows of accounts, keys and tasks that the admission of `BATCH` tasks (ids `prefix-1`...) of one account and key read. */
const admitReads = (accountId: string, keyId: string, prefix: string) =>
  SqlClient.SqlClient.use((sql) =>
    Effect.gen(function* () {
      const { value, reads } = yield* rowsRead(
        ["accounts", "api_keys", "tasks"],
        sql.unsafe<{ readonly admitted: string }>(
          `SELECT count(*) FILTER (WHERE a.outcome = 'Admitted') AS admitted FROM taskmeter_admit_requests((
          SELECT jsonb_agg(jsonb_build_object('ordinal', g, 'key_hash', null, 'now', $4::timestamptz, 'scope', 'tasks:create',
            'default_rate_limit', 1000000, 'account_id', $2::text, 'api_key_id', $3::text, 'key_usage_limit', 1000000,
            'task_id', $1::text || '-' || g, 'model', 'song-lyrics', 'input', '{}'::jsonb, 'price_micros', 10,
            'unit_micros', 10, 'quantity', 1, 'settlement', 'fixed', 'created_at', $4::timestamptz,
            'deadline_at', $4::timestamptz + interval '1 hour', 'idempotency_key', $1::text || '-' || g,
            'fingerprint', 'f', 'idempotency_expires_at', $4::timestamptz + interval '1 day',
            'submissions_per_minute', 1000000, 'max_unfinished_tasks', 1000000, 'traceparent', null))
          FROM generate_series(1, ${BATCH}) g)) a`,
          [prefix, accountId, keyId, T0.toISOString()]
        )
      )
      expect(Number(value[0]!.admitted)).toBe(BATCH)
      return reads
    })
  )

describe("storage-pg on PostgreSQL: task admission as accounts, keys and tasks accumulate", () => {
  it.live(
    "a batch reads its own account and key, not the 30,000 accounts, keys and tasks stored after its plans were made",
    () =>
      Effect.gen(function* () {
        const measured = yield* withKeptPlans(
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            yield* sql`INSERT INTO accounts (id, name, created_at, balance_micros) VALUES ('acct_growth', 'growth', ${T0}, 1000000000)`
            yield* sql`INSERT INTO api_keys (id, account_id, name, display_prefix, hash, scopes, created_at)
                VALUES ('key_growth', 'acct_growth', 'growth', 'tm_', 'hash_growth', '{tasks:create}', ${T0})`
            for (let i = 0; i < 6; i++) yield* admitReads("acct_growth", "key_growth", `warm-${i}`)
            const empty = yield* admitReads("acct_growth", "key_growth", "empty")
            yield* sql`INSERT INTO accounts (id, name, created_at) SELECT 'acct_' || g, 'seeded', ${T0} FROM generate_series(1, 30000) g`
            yield* sql`INSERT INTO api_keys (id, account_id, name, display_prefix, hash, scopes, created_at)
                SELECT 'key_' || g, 'acct_' || g, 'seeded', 'tm_', 'hash_' || g, '{tasks:create}', ${T0} FROM generate_series(1, 30000) g`
            yield* sql`INSERT INTO tasks (id, account_id, model, input, status, price_micros, unit_micros, quantity,
                  settlement, created_at, updated_at, deadline_at)
                SELECT 'task_' || g, 'acct_' || (1 + g % 30000), 'song-lyrics', '{}', 'failed', 0, 0, 1, 'fixed', ${T0}, ${T0}, ${T0}
                FROM generate_series(1, 30000) g`
            const stored = yield* admitReads("acct_growth", "key_growth", "stored")
            return { empty, stored }
          })
        )
        for (const reads of [measured.empty, measured.stored]) {
          // Per admission: its account for the foreign keys of the task, its reserve entry and its
          // Idempotency-Key, its key for the task's foreign key and its usage limit; per batch a
          // few more (the account's lock, read and update, the key's update). The joins read
          // every account three times and every key twice.
          expect(reads.accounts).toBeLessThanOrEqual(3 * BATCH + 10)
          expect(reads.api_keys).toBeLessThanOrEqual(2 * BATCH + 10)
          // The task's foreign keys from its reserve entry and its Idempotency-Key.
          expect(reads.tasks).toBeLessThanOrEqual(2 * BATCH)
        }
      }),
    120_000
  )
})
