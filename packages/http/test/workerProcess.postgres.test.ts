/**
 * A `taskmeter worker` process beside a server of the test's own without workers, on one PostgreSQL
 * schema, both exporting traces to an OTLP/HTTP JSON receiver in the test. The worker runs a
 * submitted task on the simulator; its listener (WORKER_METRICS_PORT) answers /healthz, /readyz
 * (the store and the worker's heartbeat) and /metrics behind METRICS_TOKEN with the task, claim and
 * provider series, parsed as Prometheus text; and the TaskWorker.task span the child process
 * exports links to the submission's span, the traceparent stored with the task.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Redacted } from "effect"
import { describe, expect, it } from "@effect/vitest"
import type { Money } from "@taskmeter/kernel"
import { vi } from "vitest"
import * as Dependencies from "../../../test/Dependencies.ts"
import { observedServer, scrape, sumOf, typeOf, valueOf } from "./support/Observed.ts"
import { eventually, fetchJson, admin, SERVED, SERVED_PRICE, token } from "./support/Servers.ts"
import { attribute, otlpEnv, receiver, storedTraceparent, tracingTo } from "./support/Traces.ts"
import { databaseUrl } from "./support/stores.ts"

vi.setConfig({ testTimeout: 120_000 })

const BIN = fileURLToPath(new URL("../bin/taskmeter.ts", import.meta.url))
const METRICS_TOKEN = "scrape-the-worker"

/** `taskmeter worker` with `env`, once its banner names the listener's address; stopped (SIGTERM) with the scope. */
const worker = (env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly listenerUrl: string; readonly child: ChildProcess }, Error>((resume) => {
      const child = spawn(process.execPath, [BIN, "worker"], { env, stdio: ["ignore", "pipe", "pipe"] })
      let output = ""
      const onData = (chunk: Buffer) => {
        output += chunk.toString()
        const match = /taskmeter worker: [^\n]*; metrics (http:\/\/\S+)\/metrics \(METRICS_TOKEN\)/.exec(output)
        if (match !== null) resume(Effect.succeed({ listenerUrl: match[1]!, child }))
      }
      child.stdout.on("data", onData)
      child.stderr.on("data", onData)
      child.once("exit", (code) => resume(Effect.fail(new Error(`taskmeter worker exited ${code}:\n${output}`))))
    }),
    ({ child }) =>
      Effect.callback<void>((resume) => {
        if (child.exitCode !== null) return resume(Effect.void)
        child.once("exit", () => resume(Effect.void))
        child.kill("SIGTERM")
      })
  )

describe("a taskmeter worker process", () => {
  it.live("serves its health and metrics on WORKER_METRICS_PORT, and its task's trace links to the submission", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const otlp = yield* receiver
        const server = yield* observedServer({ workers: false }, tracingTo(otlp.url, "taskmeter-api"))
        const { listenerUrl } = yield* worker({
          ...Dependencies.childEnv,
          ...otlpEnv(otlp.url, "taskmeter-worker"),
          DATABASE_URL: databaseUrl,
          DATABASE_SCHEMA: server.schema,
          OPERATOR_TOKEN: Redacted.value(token),
          PUBLIC_URL: server.url,
          DATA_DIR: mkdtempSync(join(tmpdir(), "taskmeter-worker-")),
          SIMULATED_ENABLED: "true",
          WORKER_METRICS_PORT: "0",
          METRICS_TOKEN
        })

        const live = yield* fetchJson(`${listenerUrl}/healthz`)
        expect(live).toMatchObject({ status: 200, body: { status: "live" } })
        const ready = yield* eventually(fetchJson(`${listenerUrl}/readyz`), (reply) => reply.status === 200)
        expect(ready.body).toEqual({ status: "ready", checks: { store: "ok", workers: "ok" } })
        const elsewhere = yield* fetchJson(`${listenerUrl}/admin/rpc`)
        expect(elsewhere).toMatchObject({ status: 404, body: { code: "NOT_FOUND" } })

        const created = yield* admin(server.adminUrl, (client) =>
          client.AccountCreate({ name: "split", creditsMicros: 1_000_000 as Money.Micros })
        )
        const secret = created.key.secret
        const accepted = yield* fetchJson(`${server.url}/api/v1/jobs`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${secret}`,
            "content-type": "application/json",
            "idempotency-key": randomUUID(),
            "x-request-id": "split-1"
          },
          body: JSON.stringify({ model: SERVED, input: { prompt: "a lighthouse keeper's log" } })
        })
        expect(accepted.status).toBe(202)
        const taskId = accepted.body.id as string
        const done = yield* eventually(
          fetchJson(`${server.url}/api/v1/jobs/${taskId}`, { headers: { authorization: `Bearer ${secret}` } }),
          (reply) => reply.body.status === "succeeded"
        )
        expect(done.body).toMatchObject({ status: "succeeded", provider: "simulated" })

        // The worker's metrics, under the admin listener's METRICS_TOKEN rule: not without it, nor with the operator token.
        expect((yield* scrape(listenerUrl)).status).toBe(401)
        expect((yield* scrape(listenerUrl, { authorization: `Bearer ${Redacted.value(token)}` })).status).toBe(401)
        const { status, contentType, families, text } = yield* scrape(listenerUrl, { authorization: `Bearer ${METRICS_TOKEN}` })
        expect(status).toBe(200)
        expect(contentType).toContain("text/plain; version=0.0.4")
        expect(typeOf(families, "taskmeter_task_duration_seconds")).toBe("HISTOGRAM")
        expect(typeOf(families, "taskmeter_claim_duration_seconds")).toBe("HISTOGRAM")
        expect(typeOf(families, "taskmeter_provider_calls_total")).toBe("COUNTER")
        expect(valueOf(text, "taskmeter_task_duration_seconds_count", { model: SERVED, outcome: "succeeded" })).toBe(1)
        expect(valueOf(text, "taskmeter_queue_wait_seconds_count", { model: SERVED })).toBe(1)
        expect(valueOf(text, "taskmeter_claim_duration_seconds_count")).toBeGreaterThanOrEqual(1)
        expect(valueOf(text, "taskmeter_provider_calls_total", { family: "simulated", step: "submit", result: "ok" })).toBe(1)
        expect(sumOf(text, "taskmeter_provider_call_duration_seconds_count", { family: "simulated" })).toBeGreaterThanOrEqual(1)
        expect(valueOf(text, "taskmeter_credits_charged_micros_total", { kind: "task" })).toBe(SERVED_PRICE)
        expect(valueOf(text, "taskmeter_db_pool_connections", { state: "max" })).toBeGreaterThan(0)
        // Admission happened in the server: this process counted none.
        expect(sumOf(text, "taskmeter_admissions_total")).toBe(0)

        // The trace: the server's request → TaskRunner.submit, kept as the task's traceparent; the
        // child's TaskWorker.task in a trace of its own, linked to that span.
        const spans = yield* eventually(
          Effect.sync(() => [...otlp.spans]),
          (all) =>
            all.some(
              (span) =>
                span.service === "taskmeter-worker" &&
                span.name === "TaskWorker.settle" &&
                attribute(span, "taskmeter.to") === "succeeded"
            )
        )
        const submitted = spans.find(
          (span) => span.name === "TaskRunner.submit" && attribute(span, "taskmeter.task_id") === taskId
        )
        expect(submitted?.service).toBe("taskmeter-api")
        const request = spans.find((span) => span.spanId === submitted?.parentSpanId)
        expect(attribute(request!, "http.request_id")).toBe("split-1")
        expect(yield* storedTraceparent(server.schema, taskId)).toBe(`00-${submitted?.traceId}-${submitted?.spanId}-01`)
        const task = spans.find((span) => span.name === "TaskWorker.task" && attribute(span, "taskmeter.task_id") === taskId)
        expect(task?.service).toBe("taskmeter-worker")
        expect(task?.parentSpanId ?? "").toBe("")
        expect(task?.traceId).not.toBe(submitted?.traceId)
        expect(task?.links).toEqual([expect.objectContaining({ traceId: submitted?.traceId, spanId: submitted?.spanId })])
        const children = spans.filter((span) => span.parentSpanId === task?.spanId)
        expect(children.every((span) => span.service === "taskmeter-worker" && span.traceId === task?.traceId)).toBe(true)
        expect(children.map((span) => span.name)).toEqual(expect.arrayContaining(["provider.submit", "TaskWorker.settle"]))
      })
    )
  )
})
