/**
 * The database itself refuses what the ledger must never hold, whoever writes: statements sent
 * straight to PostgreSQL, past the store, are rejected by its constraints. And the auditor
 * notices when the cached figures and the journal part ways.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { AccountStore, Ids, LedgerStore, Money, TaskStore } from "@taskmeter/kernel"
import { PgStore } from "../src/index.ts"
import { dropSchemaAfter, schemaName, url } from "./TestDatabase.ts"

const T0 = new Date("2030-01-01T00:00:00.000Z")
const USD = 1_000_000

const store = () => {
  const schema = schemaName()
  const options = { url, schema, maxConnections: 2, listen: false }
  return PgStore.layerClient({ schema }).pipe(
    Layer.provideMerge(PgStore.client(options)),
    Layer.provideMerge(dropSchemaAfter(schema))
  )
}

/** An account with 5 USD and one admitted 1 USD task, charged. */
const chargedTask = Effect.gen(function* () {
  const accountId = Ids.makeAccountId()
  yield* AccountStore.AccountStore.use((s) => s.createAccount({ id: accountId, name: "a", createdAt: T0 }))
  yield* LedgerStore.LedgerStore.use((s) => s.grant({ accountId, amountMicros: 5 * USD, note: null }))
  const tasks = yield* TaskStore.TaskStore
  const task: TaskStore.NewTask = {
    id: Ids.makeTaskId(),
    accountId,
    apiKeyId: null,
    model: "m",
    input: {},
    priceMicros: Money.micros(USD),
    unitMicros: Money.micros(USD),
    quantity: 1,
    settlement: "fixed",
    createdAt: T0,
    deadlineAt: T0
  }
  yield* tasks.admit({
    task,
    idempotencyKey: "k",
    fingerprint: "f",
    idempotencyExpiresAt: new Date(T0.getTime() + 60_000),
    limits: { submissionsPerMinute: 10, maxUnfinishedTasks: 10, keyUsageLimit: null }
  })
  const [claim] = yield* tasks.claim({ workerId: "w", limit: 1, leaseMs: 60_000, now: T0 })
  yield* tasks.transition({
    taskId: task.id,
    leaseToken: claim.leaseToken,
    from: "queued",
    to: "submitting",
    now: T0,
    keepLease: true
  })
  yield* tasks.transition({
    taskId: task.id,
    leaseToken: claim.leaseToken,
    from: "submitting",
    to: "succeeded",
    now: T0,
    chargeMicros: Money.micros(USD),
    keepLease: false
  })
  return { accountId, taskId: task.id }
})

/** The SQLSTATE class name effect/sql gives the refusal. */
const refusal = <A, R>(statement: Effect.Effect<A, unknown, R>) =>
  Effect.map(Effect.flip(statement), (error) => (error as { readonly reason: { readonly _tag: string } }).reason._tag)

describe("the PostgreSQL schema enforces the ledger's invariants", () => {
  it.live("one charge and one release per task, non-negative amounts, nothing reserved below zero", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const { accountId, taskId } = yield* chargedTask
      const entry = (kind: string, amount: number, task: string | null) =>
        sql`INSERT INTO ledger_entries (id, account_id, kind, amount_micros, task_id, created_at)
          VALUES (${Ids.makeLedgerEntryId()}, ${accountId}, ${kind}, ${amount}::bigint, ${task}::text, ${T0})`

      expect(yield* refusal(entry("charge", USD, taskId))).toBe("UniqueViolation")
      expect(yield* refusal(entry("reserve", USD, taskId))).toBe("UniqueViolation")
      yield* entry("release", 0, taskId)
      expect(yield* refusal(entry("release", 0, taskId))).toBe("UniqueViolation")
      expect(yield* refusal(entry("grant", -1, null))).toBe("ConstraintError")
      expect(yield* refusal(entry("charge", 1, null))).toBe("ConstraintError")
      yield* entry("adjustment", -1, null)
      expect(yield* refusal(sql`UPDATE accounts SET reserved_micros = -1 WHERE id = ${accountId}`)).toBe("ConstraintError")
      expect(yield* refusal(sql`UPDATE tasks SET charged_micros = price_micros + 1 WHERE id = ${taskId}`)).toBe("ConstraintError")
      expect(yield* refusal(sql`UPDATE tasks SET status = 'done' WHERE id = ${taskId}`)).toBe("ConstraintError")
      expect(
        yield* refusal(sql`INSERT INTO ledger_entries (id, account_id, kind, amount_micros, created_at)
        VALUES (${Ids.makeLedgerEntryId()}, ${Ids.makeAccountId()}, 'grant', 1, ${T0})`)
      ).toBe("ConstraintError")
      expect(
        yield* refusal(sql`INSERT INTO idempotency_keys (account_id, idempotency_key, request_fingerprint, task_id,
          expires_at)
        SELECT account_id, idempotency_key, 'another request', task_id, expires_at
        FROM idempotency_keys WHERE task_id = ${taskId}`)
      ).toBe("UniqueViolation")
      const result = (task: string) =>
        sql`INSERT INTO results (id, account_id, task_id, content_type, size_bytes, sha256, blob_key, created_at, expires_at)
          VALUES (${Ids.makeResultId()}, ${accountId}, ${task}, 'image/png', 1, ${"a".repeat(64)}, 'results/r', ${T0}, ${T0})`
      yield* result(taskId)
      expect(yield* refusal(result(Ids.makeTaskId()))).toBe("ConstraintError")
    }).pipe(Effect.provide(store()))
  )

  it.live("the auditor reports a journal entry written behind the store's back", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const { accountId } = yield* chargedTask
      const ledger = yield* LedgerStore.LedgerStore
      expect(yield* ledger.audit).toEqual([])
      yield* sql`INSERT INTO ledger_entries (id, account_id, kind, amount_micros, created_at)
        VALUES (${Ids.makeLedgerEntryId()}, ${accountId}, 'grant', 7, ${T0})`
      expect(yield* ledger.audit).toEqual([
        {
          accountId,
          cached: { balanceMicros: 4 * USD, reservedMicros: 0 },
          journal: { balanceMicros: 4 * USD + 7, reservedMicros: 0 }
        }
      ])
      yield* sql`UPDATE accounts SET balance_micros = balance_micros + 7, reserved_micros = 3 WHERE id = ${accountId}`
      expect(yield* ledger.audit).toEqual([
        {
          accountId,
          cached: { balanceMicros: 4 * USD + 7, reservedMicros: 3 },
          journal: { balanceMicros: 4 * USD + 7, reservedMicros: 0 }
        }
      ])
    }).pipe(Effect.provide(store()))
  )
})
