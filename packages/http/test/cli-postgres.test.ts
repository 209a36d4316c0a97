/**
 * `taskmeter start` as deployed: two server processes on one PostgreSQL (a fresh schema of
 * TEST_DATABASE_URL), each with its in-process workers. The CLI creates an account through
 * one, its key submits through the other, and both see the same task, idempotency and money.
 * Both stop gracefully on SIGTERM; a worker process stopping gives up its tasks' leases. A Stripe
 * event delivered to both at once grants once.
 */
import type { ChildProcess } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import Stripe from "stripe"
import { afterAll, vi } from "vitest"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import * as Dependencies from "../../../test/Dependencies.ts"
import { databaseUrl, dropSchema, schemaName } from "./support/stores.ts"
import * as TaskmeterProcess from "./support/TaskmeterProcess.ts"

vi.setConfig({ testTimeout: 180_000 })

const schema = schemaName("test")
const token = Redacted.value(OperatorToken.generate())

const env = {
  ...Dependencies.childEnv,
  DATABASE_URL: databaseUrl,
  DATABASE_SCHEMA: schema,
  OPERATOR_TOKEN: token,
  // With DATABASE_URL, the simulator runs only when asked to.
  SIMULATED_ENABLED: "true",
  PORT: "0",
  HOST: "127.0.0.1",
  // Two servers on one host: each picks a free admin port and prints it.
  ADMIN_PORT: "0",
  DATA_DIR: mkdtempSync(join(tmpdir(), "taskmeter-pg-servers-"))
}

/** `taskmeter <command>` on this file's schema, with `extraEnv` on top. */
const launch = (command: "start" | "worker", ready: RegExp, extraEnv: Record<string, string> = {}) =>
  TaskmeterProcess.launch(command, ready, { ...env, ...extraEnv })

const startServer = (extraEnv: Record<string, string> = {}) => launch("start", TaskmeterProcess.SERVER_READY, extraEnv)

/** Sends SIGTERM and waits for the process to exit; its exit code. */
const stop = (child: ChildProcess) =>
  Effect.callback<number | null>((resume) => {
    child.once("exit", (code) => resume(Effect.succeed(code)))
    child.kill("SIGTERM")
  })

const admin = (url: string, ...args: ReadonlyArray<string>) => TaskmeterProcess.admin(url, token, ...args)

const api = (url: string, path: string, key: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers }
    })
    return { status: response.status, body: (await response.json()) as any }
  })

/** Polls the task until it is terminal. */
const settled = (url: string, key: string, id: string) =>
  Effect.gen(function* () {
    let task = (yield* api(url, `/api/v1/jobs/${id}`, key)).body
    for (let i = 0; i < 200 && !["succeeded", "failed", "reconciliation_required"].includes(task.status); i++) {
      yield* Effect.sleep("50 millis")
      task = (yield* api(url, `/api/v1/jobs/${id}`, key)).body
    }
    return task
  })

const inDatabase = <A>(query: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  SqlClient.SqlClient.use(query).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 })),
    Effect.orDie
  )

/** A server without workers, an account on it, and one song-lyrics task it admitted (queued). */
const queuedTask = (idempotencyKey: string) =>
  Effect.gen(function* () {
    const server = yield* startServer({ WORKERS: "false" })
    const created = yield* admin(server.adminUrl, "account", "create", "--credits-usd", "1")
    const key: string = created.key.secret
    const submitted = yield* api(server.url, "/api/v1/jobs", key, {
      method: "POST",
      headers: { "idempotency-key": idempotencyKey },
      body: JSON.stringify({ model: "song-lyrics", input: { prompt: "nobody here runs this" } })
    })
    expect(submitted.status).toBe(202)
    return { server, key, id: submitted.body.id as string }
  })

describe("`taskmeter start` and `taskmeter worker` on one PostgreSQL", () => {
  afterAll(() => Effect.runPromise(dropSchema(schema)))

  it.live("two servers share accounts, tasks, idempotency and money, and stop on SIGTERM", () =>
    Effect.gen(function* () {
      // One after the other: the first runs the migrations on the empty schema.
      const a = yield* startServer()
      const b = yield* startServer()
      expect(a.url).not.toBe(b.url)

      const created = yield* admin(a.adminUrl, "account", "create", "--name", "shared", "--credits-usd", "5")
      const key: string = created.key.secret
      const submit = (url: string) =>
        api(url, "/api/v1/jobs", key, {
          method: "POST",
          headers: { "idempotency-key": "across-processes" },
          body: JSON.stringify({ model: "song-lyrics", input: { prompt: "two servers, one ledger" } })
        })
      const first = yield* submit(b.url)
      expect(first.status).toBe(202)
      const replay = yield* submit(a.url)
      expect(replay.status).toBe(200)
      expect(replay.body).toMatchObject({ id: first.body.id, replayed: true })

      const task = yield* settled(a.url, key, first.body.id)
      expect(task.status).toBe("succeeded")
      const shown = yield* admin(b.adminUrl, "account", "show", "--account", created.account.id)
      expect(shown.balances).toMatchObject({ balanceMicros: 5_000_000 - task.priceMicros, reservedMicros: 0 })
      expect(yield* admin(a.adminUrl, "audit")).toEqual([])

      expect(yield* stop(a.child)).toBe(0)
      expect(yield* stop(b.child)).toBe(0)
    })
  )

  it.live("a server without workers leaves its tasks to a `taskmeter worker` process", () =>
    Effect.gen(function* () {
      const { server, key, id } = yield* queuedTask("for-the-worker")
      yield* Effect.sleep("500 millis")
      expect((yield* api(server.url, `/api/v1/jobs/${id}`, key)).body.status).toBe("queued")

      const worker = yield* launch("worker", /taskmeter worker: ()/)
      expect((yield* settled(server.url, key, id)).status).toBe("succeeded")
      expect(yield* stop(worker.child)).toBe(0)
    })
  )

  it.live("a worker stopped by SIGTERM gives up the lease of its running task for another worker", () =>
    Effect.gen(function* () {
      const { server, key, id } = yield* queuedTask("handed-on")
      const worker = yield* launch("worker", /taskmeter worker: ()/, { SIMULATED_DELAY_MS: "600000" })
      let status = "queued"
      for (let i = 0; i < 200 && status !== "running"; i++) {
        yield* Effect.sleep("50 millis")
        status = (yield* api(server.url, `/api/v1/jobs/${id}`, key)).body.status
      }
      expect(status).toBe("running")

      expect(yield* stop(worker.child)).toBe(0)
      const [lease] = yield* inDatabase(
        (sql) =>
          sql<{ readonly lease_expires_at: Date | null }>`SELECT lease_expires_at FROM ${sql(schema)}.tasks
          WHERE id = ${id}`
      )
      // Given up (the epoch), not left to lapse a lease length after the stop.
      expect(lease?.lease_expires_at?.getTime()).toBe(0)
    })
  )

  it.live("the same Stripe event delivered at once to two server processes grants once", () =>
    Effect.gen(function* () {
      const stripeEnv = { STRIPE_SECRET_KEY: "sk_test_processes", STRIPE_WEBHOOK_SECRET: "whsec_processes", WORKERS: "false" }
      const a = yield* startServer(stripeEnv)
      const b = yield* startServer(stripeEnv)
      const created = yield* admin(a.adminUrl, "account", "create", "--name", "buyer")
      const accountId: string = created.account.id
      const payload = JSON.stringify({
        id: "evt_processes",
        object: "event",
        type: "checkout.session.completed",
        data: {
          object: {
            id: "cs_processes",
            object: "checkout.session",
            amount_total: 1500,
            currency: "usd",
            client_reference_id: accountId,
            payment_intent: "pi_processes",
            payment_status: "paid"
          }
        }
      })
      const signature = new Stripe("sk_test_processes").webhooks.generateTestHeaderString({ payload, secret: "whsec_processes" })
      const replies = yield* Effect.all(
        [a, b, a, b, a, b, a, b].map((server) =>
          api(server.url, "/api/v1/billing/webhooks/stripe", "", {
            method: "POST",
            headers: { "stripe-signature": signature },
            body: payload
          })
        ),
        { concurrency: "unbounded" }
      )
      expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200, 200, 200, 200, 200, 200])
      const usage = yield* api(b.url, "/api/v1/usage", created.key.secret)
      expect(usage.body.balanceMicros).toBe(15_000_000)
      expect(usage.body.entries.map((entry: { kind: string; note: string }) => [entry.kind, entry.note])).toEqual([
        ["grant", "stripe payment pi_processes: top-up"]
      ])
      expect(yield* admin(b.adminUrl, "payments", "list", "--account", accountId)).toMatchObject([
        { paymentId: "pi_processes", amountMicros: 15_000_000 }
      ])
      expect(yield* admin(a.adminUrl, "audit")).toEqual([])
    })
  )
})
