/**
 * Delivery worker processes on the real PostgreSQL (TEST_DATABASE_URL): a worker killed with
 * SIGKILL while its delivery is in flight; another worker delivers it again, with the same
 * webhook-id, once the lease lapses. Needs PostgreSQL (test/Dependencies.ts).
 */
import { spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { once } from "node:events"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { PgStore } from "@taskmeter/storage-pg"
import { Webhook } from "standardwebhooks"
import { micros } from "../../src/domain/Money.ts"
import { TaskStore } from "../../src/tasks/TaskStore.ts"
import { admission, admitted, fundedAccount, newTask, USD } from "../../src/testing/Fixtures.ts"
import { WebhookStore } from "../../src/webhooks/WebhookStore.ts"
import * as Dependencies from "../../../../test/Dependencies.ts"
import * as Receiver from "./Receiver.ts"

const url = Dependencies.databaseUrl
const WORKER = join(import.meta.dirname, "DeliveryWorkerProcess.ts")
const LEASE_MS = 1_500

const kill = (child: ChildProcess) =>
  Effect.promise(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, "exit")
    child.kill("SIGKILL")
    await exited
  })

const startWorker = (schema: string) =>
  Effect.acquireRelease(
    Effect.callback<ChildProcess, Error>((resume) => {
      const child = spawn(process.execPath, [WORKER], {
        env: { ...process.env, DATABASE_URL: url, SCHEMA: schema, LEASE_MS: String(LEASE_MS) },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let errors = ""
      child.stderr!.on("data", (chunk) => (errors += String(chunk)))
      child.stdout!.on("data", (chunk) => {
        if (String(chunk).includes("ready")) resume(Effect.succeed(child))
      })
      child.on("exit", (code) => resume(Effect.fail(new Error(`delivery worker exited (${code}): ${errors}`))))
    }),
    kill
  )

const until = (done: () => boolean, what: string, timeoutMs = 20_000) =>
  Effect.gen(function* () {
    const deadline = Date.now() + timeoutMs
    while (!done()) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`))
      yield* Effect.sleep(20)
    }
  })

describe("WebhookDelivery processes on PostgreSQL", () => {
  it.live(
    "a delivery in flight when its worker is killed is delivered again by another, with the same webhook-id",
    () =>
      Effect.gen(function* () {
        const schema = `test_webhooks_${randomUUID().replaceAll("-", "").slice(0, 16)}`
        yield* Effect.addFinalizer(() =>
          SqlClient.SqlClient.use((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`).pipe(
            Effect.provide(PgStore.client({ url, maxConnections: 1 })),
            Effect.orDie
          )
        )
        const stores = yield* Layer.build(PgStore.layer({ url, schema, maxConnections: 4 }))
        // The first request is never answered: its worker dies waiting.
        const receiver = yield* Receiver.make([0, 204])
        yield* Effect.gen(function* () {
          const accountId = yield* fundedAccount(10 * USD)
          const now = new Date()
          const endpoint = yield* WebhookStore.use((store) =>
            store.createEndpoint({
              id: `whep_${randomUUID()}`,
              accountId,
              url: receiver.url,
              events: ["task.succeeded"],
              secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
              now
            })
          )
          const task = yield* admitted(
            admission(newTask(accountId, { createdAt: now, deadlineAt: new Date(now.getTime() + 3_600_000) }))
          )
          const tasks = yield* TaskStore
          const [claim] = yield* tasks.claim({ workerId: "test", limit: 1, leaseMs: 60_000, now })
          const lease = { taskId: task.id, leaseToken: claim!.leaseToken, now }
          yield* tasks.transition({ ...lease, from: "queued", to: "submitting", keepLease: true })
          yield* tasks.transition({ ...lease, from: "submitting", to: "succeeded", keepLease: false, chargeMicros: micros(USD) })

          const first = yield* startWorker(schema)
          yield* until(() => receiver.received.length === 1, "the first attempt")
          yield* kill(first)
          yield* startWorker(schema)
          yield* until(() => receiver.received.length === 2, "the second attempt")

          const [lost, delivered] = receiver.received
          expect(delivered!.headers["webhook-id"]).toBe(lost!.headers["webhook-id"])
          expect(delivered!.body).toBe(lost!.body)
          const verified = new Webhook(endpoint.secret).verify(delivered!.body, delivered!.headers) as { data: { id: string } }
          expect(verified.data.id).toBe(task.id)
          const logged = yield* Effect.gen(function* () {
            for (;;) {
              const [row] = (yield* WebhookStore.use((store) => store.listDeliveries(accountId, endpoint.id, 10)))!
              if (row!.status !== "pending") return row!
              yield* Effect.sleep(20)
            }
          })
          // The killed worker recorded nothing; the second attempt is the only one logged.
          expect(logged).toMatchObject({ id: lost!.headers["webhook-id"], status: "delivered" })
          expect(logged.attempts.map((a) => a.statusCode)).toEqual([204])
        }).pipe(Effect.provide(stores))
      }).pipe(Effect.scoped),
    30_000
  )
})
