/**
 * Traces over OTLP/HTTP (JSON) to an in-process receiver: the API's request → TaskRunner.submit →
 * TaskStore.admit, and a worker with its own store connection and tracer (another service name,
 * as another process would be) whose TaskWorker.task → provider.submit → TaskWorker.settle trace
 * links to the submission through the traceparent kept with the task. With no endpoint nothing is
 * traced and nothing is kept.
 */
import { randomUUID } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ConfigProvider, Effect, Layer, Option, Redacted } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Executors, MediaUrls, TaskWorker } from "@taskmeter/kernel"
import { Simulated } from "@taskmeter/providers"
import * as Main from "../src/main.ts"
import * as Tracing from "../src/observability/Tracing.ts"
import { observedServer } from "./support/Observed.ts"
import { attribute, receiver, storedTraceparent, tracingTo } from "./support/Traces.ts"
import { eventually, fetchJson, SERVED, token } from "./support/Servers.ts"
import { databaseUrl } from "./support/stores.ts"

const adminRpc = (adminUrl: string, tag: string, payload: unknown) =>
  Effect.map(
    fetchJson(`${adminUrl}/admin/rpc`, {
      method: "POST",
      headers: { authorization: `Bearer ${Redacted.value(token)}`, "content-type": "application/json" },
      body: JSON.stringify({ _tag: "Request", id: "1", tag, payload, headers: [] })
    }),
    (reply) => (reply.body as ReadonlyArray<any>).find((message) => message._tag === "Exit").exit.value
  )

const submit = (url: string, secret: string) =>
  fetchJson(`${url}/api/v1/jobs`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${secret}`,
      "content-type": "application/json",
      "idempotency-key": randomUUID(),
      "x-request-id": "trace-me-1"
    },
    body: JSON.stringify({ model: SERVED, input: { prompt: "a quiet harbour" } })
  })

describe("tracing", () => {
  it.live("exports the request's and the worker's spans, the worker's trace linked to the submission", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const otlp = yield* receiver
        const server = yield* observedServer({ workers: false }, tracingTo(otlp.url, "taskmeter-api"))
        // The worker: its own connection pool and tracer, as a `taskmeter worker` process has.
        const settings: Main.Settings = {
          ...Main.defaults,
          databaseUrl: Option.some(Redacted.make(databaseUrl)),
          databaseSchema: Option.some(server.schema)
        }
        yield* Effect.forkScoped(
          TaskWorker.serve().pipe(
            Effect.provide(
              Layer.mergeAll(
                Catalog.layer,
                Layer.succeed(Executors.Executors, Executors.make({ adapters: [Simulated.make({ models: [SERVED] })] })),
                MediaUrls.layer({ baseUrl: server.url, secret: Redacted.make("a worker media-link secret, 32+ chars") }),
                Main.storage(mkdtempSync(join(tmpdir(), "taskmeter-worker-")), settings),
                tracingTo(otlp.url, "taskmeter-worker")
              )
            )
          )
        )
        const created = yield* adminRpc(server.adminUrl, "AccountCreate", { name: "traced", creditsMicros: 1_000_000 })
        const secret = created.key.secret as string
        const accepted = yield* submit(server.url, secret)
        expect(accepted.status).toBe(202)
        const taskId = accepted.body.id as string
        const done = yield* eventually(
          fetchJson(`${server.url}/api/v1/jobs/${taskId}`, { headers: { authorization: `Bearer ${secret}` } }),
          (reply) => reply.body.status === "succeeded"
        )
        expect(done.body.status).toBe("succeeded")
        const spans = yield* eventually(
          Effect.sync(() => [...otlp.spans]),
          (all) => all.some((span) => span.name === "TaskWorker.settle" && attribute(span, "taskmeter.to") === "succeeded")
        )
        const submitSpan = spans.find(
          (span) => span.name === "TaskRunner.submit" && attribute(span, "taskmeter.task_id") === taskId
        )
        expect(submitSpan?.service).toBe("taskmeter-api")
        const request = spans.find((span) => span.spanId === submitSpan?.parentSpanId)
        expect(request?.name).toBe("POST")
        expect(attribute(request!, "http.request_id")).toBe("trace-me-1")
        expect(attribute(request!, "http.route")).toBe("/api/v1/jobs")
        const admit = spans.find((span) => span.name === "TaskStore.admit" && span.parentSpanId === submitSpan?.spanId)
        expect(admit?.traceId).toBe(submitSpan?.traceId)
        expect(yield* storedTraceparent(server.schema, taskId)).toBe(`00-${submitSpan?.traceId}-${submitSpan?.spanId}-01`)

        const task = spans.find((span) => span.name === "TaskWorker.task" && attribute(span, "taskmeter.task_id") === taskId)
        expect(task?.service).toBe("taskmeter-worker")
        expect(task?.parentSpanId ?? "").toBe("")
        expect(task?.traceId).not.toBe(submitSpan?.traceId)
        expect(task?.links).toEqual([expect.objectContaining({ traceId: submitSpan?.traceId, spanId: submitSpan?.spanId })])
        const children = spans.filter((span) => span.parentSpanId === task?.spanId).map((span) => span.name)
        expect(children).toEqual(expect.arrayContaining(["TaskWorker.move", "provider.submit", "TaskWorker.settle"]))
        // Spans hold no key and no prompt (the authorization header is redacted, bodies never recorded).
        const exported = JSON.stringify(spans)
        expect(exported.includes(secret)).toBe(false)
        expect(exported.includes("a quiet harbour")).toBe(false)
      })
    )
  )

  it.live("with no endpoint nothing is traced: the task keeps no traceparent", () =>
    Effect.scoped(
      Effect.gen(function* () {
        expect(yield* Tracing.enabled.pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: {} }))))).toBe(false)
        const server = yield* observedServer({ workers: false }, tracingTo(undefined, "taskmeter-api"))
        const created = yield* adminRpc(server.adminUrl, "AccountCreate", { name: "untraced", creditsMicros: 1_000_000 })
        const accepted = yield* submit(server.url, created.key.secret)
        expect(accepted.status).toBe(202)
        expect(yield* storedTraceparent(server.schema, accepted.body.id)).toBeNull()
      })
    )
  )
})
