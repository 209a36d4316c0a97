/**
 * The trace context is written by the admission itself (migration 0041): every way through
 * `taskmeter_admit_requests` (a caller's batch admitted whole, the one-by-one fallback a repeated
 * key forces, a key's request) stores the request's `traceparent` with the task it inserts and
 * answers it, so no reader ever sees the task without it.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { postgres } from "./TestDatabase.ts"

const T0 = Date.parse("2030-01-01T00:00:00.000Z")
const traceparent = (n: number) => `00-${String(n).padStart(32, "0")}-00f067aa0ba902b7-01`

let serial = 0
const request = (who: Record<string, unknown>, fields: { readonly key: string; readonly traced: number | null }) => {
  const at = T0 + serial * 1000
  return {
    ...who,
    task_id: `task_${String(serial++).padStart(4, "0")}`,
    model: "m",
    input: { prompt: "p" },
    price_micros: 1,
    unit_micros: 1,
    quantity: 1,
    settlement: "fixed",
    created_at: new Date(at).toISOString(),
    deadline_at: new Date(at + 3_600_000).toISOString(),
    idempotency_key: fields.key,
    fingerprint: "f",
    idempotency_expires_at: new Date(at + 86_400_000).toISOString(),
    submissions_per_minute: 1000,
    max_unfinished_tasks: 1000,
    ...(fields.traced === null ? {} : { traceparent: traceparent(fields.traced) })
  }
}
const caller = { account_id: "acct_a", api_key_id: null, key_usage_limit: null }
const keyed = { key_hash: "hash_a", now: new Date(T0).toISOString(), scope: "jobs:create", default_rate_limit: 1000 }

interface Answer {
  readonly outcome: string
  readonly task_id: string
  readonly traceparent: string | null
}

const admit = (sql: SqlClient.SqlClient, requests: ReadonlyArray<Record<string, unknown>>) =>
  sql<Answer>`SELECT outcome, (task).id AS task_id, (task).traceparent
    FROM taskmeter_admit_requests(${JSON.stringify(requests.map((r, i) => ({ ordinal: i + 1, ...r })))}::jsonb)
    ORDER BY ordinal`

const stored = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>) =>
  Effect.map(
    sql<{ readonly id: string; readonly traceparent: string | null }>`SELECT id, traceparent FROM tasks
      WHERE id IN ${sql.in(ids)} ORDER BY id`,
    (rows) => rows.map((row) => row.traceparent)
  )

describe("the trace context in the admission (PostgreSQL)", () => {
  it.live(
    "is stored with the task and answered on every way through taskmeter_admit_requests",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO accounts (id, name, created_at, balance_micros) VALUES ('acct_a', 'a', ${new Date(T0)}, 100)`
        yield* sql`INSERT INTO api_keys (id, account_id, name, display_prefix, hash, scopes, created_at)
          VALUES ('key_a', 'acct_a', 'k', 'tm_x', 'hash_a', '{jobs:create}', ${new Date(T0)})`
        yield* sql`INSERT INTO api_key_windows (api_key_id) VALUES ('key_a')`

        // Admitted whole, in bulk.
        const whole = yield* admit(sql, [request(caller, { key: "k1", traced: 1 }), request(caller, { key: "k2", traced: null })])
        // A key repeated in the batch: admitted one by one, the repeat replayed.
        const oneByOne = yield* admit(sql, [request(caller, { key: "k3", traced: 3 }), request(caller, { key: "k3", traced: 4 })])
        // A key's request, counted then admitted.
        const ofKey = yield* admit(sql, [request(keyed, { key: "k5", traced: 5 })])

        expect(whole.map((a) => [a.outcome, a.traceparent])).toEqual([
          ["Admitted", traceparent(1)],
          ["Admitted", null]
        ])
        expect(oneByOne.map((a) => [a.outcome, a.traceparent])).toEqual([
          ["Admitted", traceparent(3)],
          ["Replayed", traceparent(3)]
        ])
        expect(ofKey.map((a) => [a.outcome, a.traceparent])).toEqual([["Admitted", traceparent(5)]])
        const admitted = [...whole, oneByOne[0]!, ...ofKey]
        expect(
          yield* stored(
            sql,
            admitted.map((a) => a.task_id)
          )
        ).toEqual(admitted.map((a) => a.traceparent))
      }).pipe(Effect.provide(Layer.fresh(postgres()))),
    30_000
  )
})
