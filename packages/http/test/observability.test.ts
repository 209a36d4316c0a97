/**
 * Operating the composed server: /healthz and /readyz (ready; not ready when the store lacks a
 * migration or the workers' heartbeat is stale or absent), the admin listener's /metrics after
 * real traffic (parsed by a Prometheus text-format parser) and after a held event loop, request ids, access lines (and
 * ACCESS_LOG=false), and a whole captured log free of the key, the prompts and the tokens used.
 */
import { randomUUID } from "node:crypto"
import { Effect, Layer, Option, Redacted } from "effect"
import { HttpRouter } from "effect/http"
import { describe, expect, it } from "@effect/vitest"
import { Errors, Heartbeat, type Money, StoreError, StoreHealth } from "@taskmeter/kernel"
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "effect/sql"
import * as Health from "../src/observability/Health.ts"
import { observedServer, scrape, sumOf, typeOf, valueOf } from "./support/Observed.ts"
import { eventually, fetchJson, SERVED, SERVED_PRICE, token } from "./support/Servers.ts"
import { databaseUrl } from "./support/stores.ts"

const adminRpc = (adminUrl: string, body: unknown) =>
  fetchJson(`${adminUrl}/admin/rpc`, {
    method: "POST",
    headers: { authorization: `Bearer ${Redacted.value(token)}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

/** A funded account's key secret, through the admin RPC as the CLI sends it. */
const customer = (adminUrl: string) =>
  Effect.map(
    adminRpc(adminUrl, {
      _tag: "Request",
      id: "1",
      tag: "AccountCreate",
      payload: { name: "acme", creditsMicros: 10_000_000 as Money.Micros },
      headers: []
    }),
    (reply) => {
      const exit = (reply.body as ReadonlyArray<any>).find((message) => message._tag === "Exit")
      return exit.exit.value.key.secret as string
    }
  )

const submit = (url: string, secret: string, prompt: string, model = SERVED, headers: Record<string, string> = {}) =>
  fetchJson(`${url}/api/v1/jobs`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${secret}`,
      "content-type": "application/json",
      "idempotency-key": randomUUID(),
      ...headers
    },
    body: JSON.stringify({ model, input: { prompt } })
  })

describe("health", () => {
  it.live("/healthz is live; /readyz is ready with the store and the workers, 503 once the store lacks a migration", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const server = yield* observedServer()
        const live = yield* fetchJson(`${server.url}/healthz`)
        expect(live.status).toBe(200)
        expect(live.body).toEqual({ status: "live" })
        const ready = yield* eventually(fetchJson(`${server.url}/readyz`), (reply) => reply.status === 200)
        expect(ready.body).toEqual({ status: "ready", checks: { store: "ok", workers: "ok" } })

        yield* SqlClient.SqlClient.use(
          (sql) => sql`DELETE FROM ${sql(server.schema)}.taskmeter_migrations WHERE migration_id = (
            SELECT max(migration_id) FROM ${sql(server.schema)}.taskmeter_migrations)`
        ).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 })))
        const behind = yield* fetchJson(`${server.url}/readyz`)
        expect(behind.status).toBe(503)
        expect(behind.body.code).toBe("API_UNAVAILABLE")
        expect(behind.body.error).toMatch(/^Not ready: store: The database has migrations up to \d+, this release needs \d+/)
        expect(behind.body.error).not.toContain("workers")
      })
    )
  )

  it.live("/readyz answers 503 for a store that does not answer, and for workers that stopped beating or never did", () =>
    Effect.gen(function* () {
      const storeOf = (check: StoreHealth.StoreHealth["Service"]["check"]) =>
        Layer.succeed(StoreHealth.StoreHealth, { check, queueDepth: Effect.succeed([]), connections: Effect.undefined })
      const heartbeatAt = (last: number | undefined) =>
        Layer.succeed(Heartbeat.Heartbeat, { beat: Effect.void, last: Effect.succeed(last) })
      const readyz = (layer: Layer.Layer<StoreHealth.StoreHealth | Heartbeat.Heartbeat>) =>
        Effect.acquireUseRelease(
          Effect.sync(() => HttpRouter.toWebHandler(Health.layer.pipe(Layer.provide(layer)), { disableLogger: true })),
          ({ handler }) =>
            Effect.promise(async () => {
              const response = await handler(new Request("http://local/readyz"))
              return { status: response.status, body: (await response.json()) as any }
            }),
          ({ dispose }) => Effect.promise(dispose)
        )
      const down = yield* readyz(
        Layer.merge(
          storeOf(Effect.fail(new StoreError.StoreUnavailable({ message: "connection refused" }))),
          heartbeatAt(Date.now())
        )
      )
      expect(down).toEqual({ status: 503, body: { code: "API_UNAVAILABLE", error: "Not ready: store: connection refused." } })
      const stale = yield* readyz(Layer.merge(storeOf(Effect.void), heartbeatAt(Date.now() - Health.STALE_HEARTBEAT_MS - 5_000)))
      expect(stale.status).toBe(503)
      expect(stale.body.error).toMatch(/^Not ready: workers: the workers' last heartbeat was 6\d s ago\.$/)
      const never = yield* readyz(Layer.merge(storeOf(Effect.void), heartbeatAt(undefined)))
      expect(never.body.error).toBe("Not ready: workers: the workers have not started.")
      const behind = yield* readyz(
        Layer.merge(
          storeOf(Effect.fail(new StoreHealth.MigrationsBehind({ message: "migrations behind" }))),
          heartbeatAt(Date.now())
        )
      )
      expect(behind.body.error).toBe("Not ready: store: migrations behind.")
      expect(Errors.codes).toContain(behind.body.code)
    })
  )
})

describe("metrics and logs", () => {
  it.live(
    "after real traffic /metrics shows requests, admissions, credits, tasks, upstream calls, chat and the pool; the log has ids and no secrets",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const server = yield* observedServer()
          const secret = yield* customer(server.adminUrl)
          const prompt = `the harbour at night ${randomUUID()}`
          const chatPrompt = `a private question ${randomUUID()}`

          const accepted = yield* submit(server.url, secret, prompt, SERVED, { "x-request-id": "req-abc.123" })
          expect(accepted.status).toBe(202)
          expect(accepted.headers.get("x-request-id")).toBe("req-abc.123")
          const refused = yield* submit(server.url, secret, prompt, "no-such-model", { "x-request-id": "<script>" })
          expect(refused.status).toBe(404)
          const madeId = refused.headers.get("x-request-id")
          expect(madeId).toMatch(/^[0-9a-f-]{36}$/)
          const taskId = accepted.body.id as string
          const done = yield* eventually(
            fetchJson(`${server.url}/api/v1/jobs/${taskId}`, { headers: { authorization: `Bearer ${secret}` } }),
            (reply) => reply.body.status === "succeeded"
          )
          expect(done.body.status).toBe("succeeded")
          const chat = yield* fetchJson(`${server.url}/api/v1/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "taskmeter-local", messages: [{ role: "user", content: chatPrompt }] })
          })
          expect(chat.status).toBe(200)
          const unknownRoute = yield* fetchJson(`${server.url}/api/v1/nothing-here/${randomUUID()}`)
          expect(unknownRoute.status).toBe(404)
          // A method of a client's choosing adds no series of its own.
          const odd = yield* Effect.promise(() => fetch(`${server.url}/api/v1/jobs`, { method: "PROPFIND" }))
          expect(odd.status).toBe(404)

          const { status, contentType, families, text } = yield* scrape(server.adminUrl)
          expect(status).toBe(200)
          expect(contentType).toContain("text/plain; version=0.0.4")
          expect(typeOf(families, "taskmeter_http_requests_total")).toBe("COUNTER")
          expect(typeOf(families, "taskmeter_http_request_duration_seconds")).toBe("HISTOGRAM")
          expect(typeOf(families, "taskmeter_db_pool_connections")).toBe("GAUGE")
          const posted = { route: "/api/v1/jobs", method: "POST" }
          expect(valueOf(text, "taskmeter_http_requests_total", { ...posted, status: "202" })).toBe(1)
          expect(valueOf(text, "taskmeter_http_requests_total", { ...posted, status: "404" })).toBe(1)
          expect(valueOf(text, "taskmeter_http_requests_total", { route: "unmatched", method: "GET", status: "404" })).toBe(1)
          expect(sumOf(text, "taskmeter_http_requests_total", { method: "other" })).toBe(1)
          expect(text).not.toContain("PROPFIND")
          expect(valueOf(text, "taskmeter_http_request_duration_seconds_count", posted)).toBe(2)
          expect(valueOf(text, "taskmeter_admissions_total", { outcome: "admitted" })).toBe(1)
          expect(valueOf(text, "taskmeter_admissions_total", { outcome: "MODEL_NOT_FOUND" })).toBe(1)
          expect(valueOf(text, "taskmeter_credits_reserved_micros_total", { kind: "task" })).toBe(SERVED_PRICE)
          expect(valueOf(text, "taskmeter_credits_charged_micros_total", { kind: "task" })).toBe(SERVED_PRICE)
          expect(valueOf(text, "taskmeter_credits_released_micros_total", { kind: "task" })).toBe(0)
          expect(valueOf(text, "taskmeter_task_duration_seconds_count", { model: SERVED, outcome: "succeeded" })).toBe(1)
          expect(valueOf(text, "taskmeter_queue_wait_seconds_count", { model: SERVED })).toBe(1)
          expect(valueOf(text, "taskmeter_claim_duration_seconds_count")).toBeGreaterThanOrEqual(1)
          expect(valueOf(text, "taskmeter_provider_calls_total", { family: "simulated", step: "submit", result: "ok" })).toBe(1)
          expect(sumOf(text, "taskmeter_provider_call_duration_seconds_count", { family: "simulated" })).toBeGreaterThanOrEqual(1)
          expect(valueOf(text, "taskmeter_chat_requests_total", { model: "taskmeter-local", outcome: "succeeded" })).toBe(1)
          expect(valueOf(text, "taskmeter_chat_tokens_total", { model: "taskmeter-local", kind: "prompt" })).toBeGreaterThan(0)
          expect(valueOf(text, "taskmeter_chat_tokens_total", { model: "taskmeter-local", kind: "completion" })).toBeGreaterThan(
            0
          )
          const chatCharged = valueOf(text, "taskmeter_credits_charged_micros_total", { kind: "chat" })
          expect(chatCharged).toBeGreaterThan(0)
          expect(chatCharged + valueOf(text, "taskmeter_credits_released_micros_total", { kind: "chat" })).toBe(
            valueOf(text, "taskmeter_credits_reserved_micros_total", { kind: "chat" })
          )
          expect(valueOf(text, "taskmeter_db_pool_connections", { state: "max" })).toBe(16)

          // The log: JSON lines, one access line per request with its id, account and task.
          const lines = server.lines.map((line) => JSON.parse(line) as Record<string, unknown>)
          const access = lines.filter((line) => line.message === "request")
          expect(access.find((line) => line.requestId === "req-abc.123")).toMatchObject({
            level: "INFO",
            method: "POST",
            route: "/api/v1/jobs",
            status: 202,
            taskId,
            accountId: expect.stringMatching(/^acct_/)
          })
          expect(access.find((line) => line.requestId === madeId)).toMatchObject({ status: 404, route: "/api/v1/jobs" })
          expect(access.filter((line) => line.route === "/api/v1/jobs/:id").length).toBeGreaterThanOrEqual(1)
          const whole = server.lines.join("\n")
          for (const secretText of [secret, prompt, chatPrompt, Redacted.value(token)]) {
            expect(whole.includes(secretText), `the log holds ${secretText.slice(0, 12)}...`).toBe(false)
          }
        })
      )
  )

  it.live("ACCESS_LOG=false writes no access line; METRICS_TOKEN guards /metrics", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const server = yield* observedServer({
          accessLog: false,
          workers: false,
          metricsToken: Option.some(Redacted.make("scrape-me"))
        })
        const secret = yield* customer(server.adminUrl)
        expect((yield* submit(server.url, secret, "quiet")).status).toBe(202)
        expect(server.lines.map((line) => JSON.parse(line)).filter((line) => line.message === "request")).toEqual([])
        expect((yield* scrape(server.adminUrl)).status).toBe(401)
        expect((yield* scrape(server.adminUrl, { authorization: `Bearer ${Redacted.value(token)}` })).status).toBe(401)
        const scraped = yield* scrape(server.adminUrl, { authorization: "Bearer scrape-me" })
        expect(scraped.status).toBe(200)
        // No worker here: the task waits, and the gauge read at scrape time shows it.
        expect(valueOf(scraped.text, "taskmeter_queue_depth", { status: "queued", model: SERVED })).toBe(1)
      })
    )
  )

  it.live("/metrics shows how late the event loop ran since the previous scrape", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const server = yield* observedServer({ workers: false })
        const stat = (text: string, name: string) => valueOf(text, "taskmeter_event_loop_delay_seconds", { stat: name })
        yield* scrape(server.adminUrl)
        // The loop held for 300 ms, then let run for its timer to record the late interval.
        const until = performance.now() + 300
        while (performance.now() < until) {
          // busy: no timer can run
        }
        yield* Effect.sleep("50 millis")
        const blocked = yield* scrape(server.adminUrl)
        expect(typeOf(blocked.families, "taskmeter_event_loop_delay_seconds")).toBe("GAUGE")
        expect(stat(blocked.text, "max")).toBeGreaterThanOrEqual(0.25)
        expect(stat(blocked.text, "p50")).toBeLessThan(stat(blocked.text, "max"))
        // A new interval began with that scrape: the held loop is not in the next one.
        yield* Effect.sleep("50 millis")
        const next = yield* scrape(server.adminUrl)
        expect(stat(next.text, "max")).toBeLessThan(0.25)
      })
    )
  )
})
