/**
 * The event stream across processes, as deployed: a `taskmeter start` without workers serves the
 * stream while a `taskmeter worker` process on the same PostgreSQL schema runs the task on the
 * simulator; the statuses reach the stream through the store's NOTIFY. Then the server is stopped
 * (SIGTERM) with a stream open: the stream ends at once and the process exits without waiting
 * out the graceful-shutdown timeout.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Redacted } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { afterAll, vi } from "vitest"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import * as Dependencies from "../../../test/Dependencies.ts"
import * as Reader from "./support/EventStreamReader.ts"
import { databaseUrl, dropSchema, schemaName } from "./support/stores.ts"
import * as TaskmeterProcess from "./support/TaskmeterProcess.ts"

vi.setConfig({ testTimeout: 180_000 })

const schema = schemaName("events")
const token = Redacted.value(OperatorToken.generate())

const env = {
  ...Dependencies.childEnv,
  DATABASE_URL: databaseUrl,
  DATABASE_SCHEMA: schema,
  OPERATOR_TOKEN: token,
  PORT: "0",
  HOST: "127.0.0.1",
  ADMIN_PORT: "0",
  DATA_DIR: mkdtempSync(join(tmpdir(), "taskmeter-events-")),
  SIMULATED_ENABLED: "true",
  SIMULATED_DELAY_MS: "1500",
  SSE_HEARTBEAT_SECONDS: "1"
}

const MODEL = "alpha-2-lite-text-to-image-economy"

const submit = (url: string, key: string, name: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/api/v1/jobs`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "idempotency-key": name },
      body: JSON.stringify({ model: MODEL, input: { prompt: name } })
    })
    expect(response.status).toBe(202)
    return ((await response.json()) as { readonly id: string }).id
  })

const events = (frames: ReadonlyArray<Reader.Frame>) => frames.filter((frame) => frame.comment === undefined)

describe("GET /api/v1/jobs/{id}/events across processes on PostgreSQL", () => {
  afterAll(() => Effect.runPromise(dropSchema(schema)))

  it.live("a server streams what a worker in another process does, and ends its streams when it stops", () =>
    Effect.gen(function* () {
      const server = yield* TaskmeterProcess.launch("start", TaskmeterProcess.SERVER_READY, { ...env, WORKERS: "false" })
      const created = yield* TaskmeterProcess.admin(server.adminUrl, token, "account", "create", "--credits-usd", "10")
      const key: string = created.key.secret
      const auth = { authorization: `Bearer ${key}` }

      const id = yield* submit(server.url, key, "across")
      const stream = yield* Effect.promise(() => Reader.open(`${server.url}/api/v1/jobs/${id}/events`, auth))
      expect(stream.status).toBe(200)
      const first = yield* Effect.promise(stream.next)
      expect(first).toMatchObject({ id: "1", event: "status" })

      // Only now does a worker exist, in another process.
      const worker = yield* TaskmeterProcess.launch("worker", /taskmeter worker: ()/, env)
      // Status events are numbered and only move forward; progress events (unnumbered) may come between.
      const frames = events(yield* Effect.promise(stream.rest).pipe(Effect.timeout("60 seconds")))
      const ids = frames.filter((frame) => frame.event !== "progress").map((frame) => Number(frame.id))
      expect(ids).toEqual([...ids].sort((a, b) => a - b))
      expect(new Set(ids).size).toBe(ids.length)
      expect(frames.slice(0, -1).every((frame) => frame.event === "status" || frame.event === "progress")).toBe(true)
      const last = frames.at(-1)
      expect(last).toMatchObject({ id: "5", event: "task" })
      // It went through running on the worker, and its final event is the task as GET shows it.
      expect(frames.map((frame) => JSON.parse(frame.data ?? "{}").status)).toContain("running")
      const shown = yield* Effect.promise(() => fetch(`${server.url}/api/v1/jobs/${id}`, { headers: auth }).then((r) => r.json()))
      expect(JSON.parse(last?.data ?? "")).toEqual(shown)
      expect(shown).toMatchObject({ status: "succeeded" })

      // With the worker gone, a task stays queued: its stream open while the server stops ends at
      // once, and the server exits soon after (not after the 20 s graceful-shutdown timeout).
      yield* Effect.promise(() => new Promise((resolve) => worker.child.once("exit", resolve).kill("SIGTERM")))
      const other = yield* submit(server.url, key, "stopped")
      const open = yield* Effect.promise(() => Reader.open(`${server.url}/api/v1/jobs/${other}/events`, auth))
      expect(yield* Effect.promise(open.next)).toMatchObject({ id: "1" })
      const started = Date.now()
      const exited = new Promise<number | null>((resolve) => server.child.once("exit", resolve))
      server.child.kill("SIGTERM")
      const rest = yield* Effect.promise(open.rest).pipe(Effect.timeout("10 seconds"))
      expect(Date.now() - started).toBeLessThan(2_000)
      expect(events(rest)).toEqual([])
      expect(yield* Effect.promise(() => exited).pipe(Effect.timeout("15 seconds"))).toBe(0)
      expect(Date.now() - started).toBeLessThan(10_000)
    }).pipe(Effect.scoped)
  )
})
