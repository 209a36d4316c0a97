/**
 * Purging expired Idempotency-Keys on the real PostgreSQL, where purges and admissions of
 * several processes meet: what the conformance suite cannot stage with one connection.
 */
import { Deferred, Effect, Fiber, Layer } from "effect"
import type { Context } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { AccountStore, Ids, LedgerStore, Money, TaskStore } from "@taskmeter/kernel"
import { PgStore } from "../src/index.ts"
import { dropSchemaAfter, schemaName, url } from "./TestDatabase.ts"

const USD = 1_000_000
const T0 = new Date("2030-01-01T00:00:00.000Z")
const at = (seconds: number): Date => new Date(T0.getTime() + seconds * 1000)

type Process = Context.Context<PgStore.Stores | SqlClient.SqlClient>

/** Two stores ("processes") on one fresh schema, for the scope of the test. */
const twoProcesses = Effect.gen(function* () {
  const schema = schemaName()
  yield* Layer.build(dropSchemaAfter(schema))
  const start = Layer.build(PgStore.layer({ url, schema, maxConnections: 8 }))
  return yield* Effect.all([start, start], { concurrency: 2 })
})

const on =
  (process: Process) =>
  <A, E>(effect: Effect.Effect<A, E, PgStore.Stores | SqlClient.SqlClient>) =>
    Effect.provide(effect, process)

const fundedAccount = Effect.gen(function* () {
  const account = yield* AccountStore.AccountStore.use((store) =>
    store.createAccount({ id: Ids.makeAccountId(), name: "purge", createdAt: T0 })
  )
  yield* LedgerStore.LedgerStore.use((store) =>
    store.grant({ accountId: account.id, amountMicros: 10_000 * USD, note: "top-up" })
  )
  return account.id
})

const admit = (accountId: Ids.AccountId, idempotencyKey: string, createdAt: Date, expiresAt: Date) =>
  TaskStore.TaskStore.use((store) =>
    store.admit({
      task: {
        id: Ids.makeTaskId(),
        accountId,
        apiKeyId: null,
        model: "purge",
        input: { prompt: "purge" },
        priceMicros: Money.micros(1),
        unitMicros: Money.micros(1),
        quantity: 1,
        settlement: "fixed",
        createdAt,
        deadlineAt: at(3600)
      },
      idempotencyKey,
      fingerprint: `fp-${idempotencyKey}`,
      idempotencyExpiresAt: expiresAt,
      limits: { submissionsPerMinute: 1_000_000, maxUnfinishedTasks: 1_000_000, keyUsageLimit: null }
    })
  )

const purge = (expiredBefore: Date, limit: number) =>
  TaskStore.TaskStore.use((store) => store.purgeIdempotencyKeys(expiredBefore, limit))

const keyRow = (accountId: Ids.AccountId, idempotencyKey: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ readonly task_id: string }>`SELECT task_id FROM idempotency_keys
      WHERE account_id = ${accountId} AND idempotency_key = ${idempotencyKey}`
  )

/** Until some statement waits for transaction `xid` to end. */
const waitForLockOn = (xid: string) =>
  SqlClient.SqlClient.use((sql) =>
    Effect.gen(function* () {
      for (let attempt = 0; attempt < 500; attempt++) {
        const [{ waiting }] = yield* sql<{ readonly waiting: number }>`SELECT count(*)::integer AS waiting
          FROM pg_locks WHERE NOT granted AND locktype = 'transactionid' AND transactionid::text = ${xid}`
        if (waiting > 0) return
        yield* Effect.sleep(10)
      }
      return yield* Effect.die(new Error(`nothing waited for transaction ${xid}`))
    })
  )

describe("purging Idempotency-Keys (PostgreSQL)", () => {
  it.live("a reuse of an expired key that a purge deletes meanwhile still records its key", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const [first, second] = yield* twoProcesses
        const accountId = yield* on(first)(fundedAccount)
        expect((yield* on(first)(admit(accountId, "k", T0, at(60))))._tag).toBe("Admitted")

        // The purge deletes the expired key and waits to commit; the reuse reads the key before
        // that commit, so it writes its key over a row that is gone once the purge commits. This
        // calls taskmeter_admit itself: the bulk path (0007) waits on the purge before it reads.
        const deleted = yield* Deferred.make<string>()
        const commit = yield* Deferred.make<void>()
        const purging = yield* on(first)(
          SqlClient.SqlClient.use((sql) =>
            sql.withTransaction(
              Effect.gen(function* () {
                yield* sql`DELETE FROM idempotency_keys WHERE account_id = ${accountId} AND idempotency_key = 'k'`
                const [{ xid }] = yield* sql<{ readonly xid: string }>`SELECT xid(pg_current_xact_id())::text AS xid`
                yield* Deferred.succeed(deleted, xid)
                yield* Deferred.await(commit)
              })
            )
          )
        ).pipe(Effect.forkChild)
        const xid = yield* Deferred.await(deleted)

        const taskId = Ids.makeTaskId()
        const reusing = yield* on(second)(
          SqlClient.SqlClient.use(
            (sql) =>
              sql<{ readonly outcome: string }>`SELECT outcome FROM taskmeter_admit(
          ${taskId}, ${accountId}, NULL, 'purge', '{"prompt":"again"}'::jsonb, 1, 1, 1, 'fixed',
          ${at(61)}, ${at(3600)}, 'k', 'fp-again', ${at(61 + 86_400)}, 1000000, 1000000, NULL, NULL
        )`
          )
        ).pipe(Effect.forkChild)
        // The reuse is waiting for the purge's transaction: it has read the key already.
        yield* on(second)(waitForLockOn(xid))
        yield* Deferred.succeed(commit, undefined)
        yield* Fiber.join(purging)

        expect((yield* Fiber.join(reusing)).map((row) => row.outcome)).toEqual(["Admitted"])
        expect(yield* on(second)(keyRow(accountId, "k"))).toEqual([{ task_id: taskId }])
        const retry = yield* on(first)(admit(accountId, "k", at(62), at(62 + 86_400)))
        expect(retry._tag === "IdempotencyConflict" && retry.taskId).toBe(taskId)
      })
    )
  )

  it.live("purges in several processes at once delete each expired key once and no live one", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const processes = yield* twoProcesses
        const [first] = processes
        const accounts = yield* on(first)(Effect.all([fundedAccount, fundedAccount, fundedAccount]))
        const expired = 300
        const live = 60
        yield* on(first)(
          Effect.forEach(
            Array.from({ length: expired + live }, (_, i) => i),
            (i) => admit(accounts[i % 3], `key-${i}`, T0, i < expired ? at(60 + i) : at(3600 + i)),
            { concurrency: 16 }
          )
        )

        // Eight purgers in chunks of 25, while new admissions keep arriving.
        const purger = (index: number) =>
          on(processes[index % 2])(
            Effect.gen(function* () {
              let total = 0
              for (;;) {
                const deleted = yield* purge(at(1000), 25)
                total += deleted
                if (deleted === 0) return total
              }
            })
          )
        const admitting = (index: number) =>
          on(processes[index % 2])(admit(accounts[index % 3], `new-${index}`, at(500), at(500 + 86_400)))
        const [purged, admitted] = yield* Effect.all(
          [
            Effect.all(
              Array.from({ length: 8 }, (_, i) => purger(i)),
              { concurrency: "unbounded" }
            ),
            Effect.all(
              Array.from({ length: 40 }, (_, i) => admitting(i)),
              { concurrency: "unbounded" }
            )
          ],
          { concurrency: "unbounded" }
        )

        expect(purged.reduce((sum, n) => sum + n, 0)).toBe(expired)
        expect(admitted.every((result) => result._tag === "Admitted")).toBe(true)
        const [{ left }] = yield* on(first)(
          SqlClient.SqlClient.use((sql) => sql<{ readonly left: number }>`SELECT count(*)::integer AS left FROM idempotency_keys`)
        )
        expect(left).toBe(live + 40)
        for (let i = expired; i < expired + live; i++) {
          const replay = yield* on(processes[i % 2])(admit(accounts[i % 3], `key-${i}`, at(2000), at(2000 + 86_400)))
          expect(replay._tag).toBe("Replayed")
        }
      })
    )
  )
})
