/**
 * Upstream limits across processes, as deployed: a server without workers and two `taskmeter
 * worker` processes on one PostgreSQL (a fresh schema of TEST_DATABASE_URL), the song family on a
 * local HTTP upstream (the song API's lyrics calls) that counts the jobs it has under way. With
 * SONG_MAX_CONCURRENCY=2, it never sees more than two at once, though each worker alone may run two.
 */
import { mkdtempSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Redacted } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { afterAll, vi } from "vitest"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import * as Dependencies from "../../../test/Dependencies.ts"
import { databaseUrl, dropSchema, schemaName } from "./support/stores.ts"
import * as TaskmeterProcess from "./support/TaskmeterProcess.ts"

vi.setConfig({ testTimeout: 180_000 })

const schema = schemaName("limits")
const token = Redacted.value(OperatorToken.generate())
const LIMIT = 2
const TASKS = 6
/** How long a lyrics job stays PENDING upstream. */
const JOB_MS = 1_500

/** The song API's lyrics calls; a job is under way from its creation until a poll reports it done. */
const upstream = () => {
  const jobs = new Map<string, { readonly createdAt: number; done: boolean }>()
  const counts = { created: 0, underWay: 0, most: 0 }
  const reply = (response: import("node:http").ServerResponse, data: unknown) => {
    response.writeHead(200, { "content-type": "application/json" })
    response.end(JSON.stringify({ code: 200, msg: "success", data }))
  }
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://upstream.test")
    if (request.method === "POST" && url.pathname === "/api/v1/lyrics") {
      request.resume()
      request.on("end", () => {
        const taskId = `lyrics-${++counts.created}`
        jobs.set(taskId, { createdAt: Date.now(), done: false })
        counts.underWay++
        counts.most = Math.max(counts.most, counts.underWay)
        reply(response, { taskId })
      })
      return
    }
    if (request.method === "GET" && url.pathname === "/api/v1/lyrics/record-info") {
      const job = jobs.get(url.searchParams.get("taskId") ?? "")
      if (job === undefined) return reply(response, null)
      if (Date.now() - job.createdAt < JOB_MS) return reply(response, { status: "PENDING" })
      if (!job.done) {
        job.done = true
        counts.underWay--
      }
      return reply(response, { status: "SUCCESS", response: { data: [{ title: "Ledger", text: "la la la" }] } })
    }
    response.writeHead(404).end()
  })
  return Effect.acquireRelease(
    Effect.callback<{ readonly url: string; readonly counts: typeof counts }>((resume) => {
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, counts }))
      )
    }),
    () => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
  )
}

const baseEnv = {
  ...Dependencies.childEnv,
  DATABASE_URL: databaseUrl,
  DATABASE_SCHEMA: schema,
  OPERATOR_TOKEN: token,
  PORT: "0",
  HOST: "127.0.0.1",
  ADMIN_PORT: "0",
  DATA_DIR: mkdtempSync(join(tmpdir(), "taskmeter-limits-")),
  SONG_API_KEY: "song-test-key",
  SONG_MAX_CONCURRENCY: String(LIMIT)
}

const { launch } = TaskmeterProcess

const admin = (url: string, ...args: ReadonlyArray<string>) => TaskmeterProcess.admin(url, token, ...args)

const api = (url: string, path: string, key: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers }
    })
    return { status: response.status, body: (await response.json()) as any }
  })

const settled = (url: string, key: string, id: string) =>
  Effect.gen(function* () {
    let task = (yield* api(url, `/api/v1/jobs/${id}`, key)).body
    for (let i = 0; i < 600 && !["succeeded", "failed", "reconciliation_required"].includes(task.status); i++) {
      yield* Effect.sleep("100 millis")
      task = (yield* api(url, `/api/v1/jobs/${id}`, key)).body
    }
    return task
  })

describe("upstream limits across worker processes on PostgreSQL", () => {
  afterAll(() => Effect.runPromise(dropSchema(schema)))

  it.live(`two workers together keep SONG_MAX_CONCURRENCY=${LIMIT} at the upstream`, () =>
    Effect.gen(function* () {
      const song = yield* upstream()
      const env = { ...baseEnv, SONG_BASE_URL: song.url }
      const server = yield* launch("start", TaskmeterProcess.SERVER_READY, {
        ...env,
        WORKERS: "false"
      })
      // Both workers are up before the tasks arrive, so that each claims its share at once.
      yield* launch("worker", /taskmeter worker: ()/, env)
      yield* launch("worker", /taskmeter worker: ()/, env)
      const created = yield* admin(server.adminUrl, "account", "create", "--credits-usd", "10")
      const key: string = created.key.secret
      const ids: Array<string> = []
      for (let i = 0; i < TASKS; i++) {
        const submitted = yield* api(server.url, "/api/v1/jobs", key, {
          method: "POST",
          headers: { "idempotency-key": `limited-${i}` },
          body: JSON.stringify({ model: "song-lyrics", input: { prompt: `verse ${i}` } })
        })
        expect(submitted.status).toBe(202)
        ids.push(submitted.body.id)
      }
      // With DATABASE_URL and no SIMULATED_ENABLED, a family without an upstream is unavailable.
      const unavailable = yield* api(server.url, "/api/v1/jobs", key, {
        method: "POST",
        headers: { "idempotency-key": "no-upstream" },
        body: JSON.stringify({ model: "alpha-2-lite-text-to-image-economy", input: { prompt: "a lighthouse" } })
      })
      expect(unavailable.status).toBe(503)
      expect(unavailable.body.code).toBe("EXECUTION_UNAVAILABLE")

      const tasks = yield* Effect.forEach(ids, (id) => settled(server.url, key, id))
      expect(tasks.map((task) => task.status)).toEqual(ids.map(() => "succeeded"))
      expect(tasks.every((task) => task.provider === "song")).toBe(true)
      expect(song.counts.created).toBe(TASKS)
      expect(song.counts.most).toBeLessThanOrEqual(LIMIT)
      expect(song.counts.most).toBe(LIMIT)
    }).pipe(Effect.scoped)
  )
})
