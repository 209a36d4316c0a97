/**
 * A worker killed mid-submit, across processes on PostgreSQL: worker process A sends a lyrics job
 * to the fake song upstream (node:http in this process, which keeps the answer back) and is
 * killed; worker process B takes the lapsed lease and, with no lookup on the song API, holds the
 * task for reconciliation. The upstream's callback to the per-task URL A sent reaches this
 * process's server, whose Reconciler polls the job and settles the task: submitted once, charged once.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { mkdtempSync } from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { describe, expect, layer } from "@effect/vitest"
import { BlobStore, type Ids, LedgerStore, type Money, TaskStore } from "@taskmeter/kernel"
import { OAuthStore } from "@taskmeter/mcp"
import { Song } from "@taskmeter/providers"
import { PgStore } from "@taskmeter/storage-pg"
import * as AdminClient from "../src/admin/AdminClient.ts"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import * as Main from "../src/main.ts"
import * as ServerConfig from "../src/ServerConfig.ts"
import * as Dependencies from "../../../test/Dependencies.ts"
import { databaseUrl, dropSchema, schemaName } from "./support/stores.ts"

const USD = 1_000_000
const SECRET = "the callback recovery test's signing secret, 32+ chars"
const WORKER = join(import.meta.dirname, "support", "CallbackWorkerProcess.ts")
const LYRICS = "[Verse]\nA worker fell asleep\n[Chorus]\nThe ledger kept its word"
const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-recovery-"))
const blobDir = mkdtempSync(join(tmpdir(), "taskmeter-recovery-blobs-"))
const schema = schemaName("recovery")
const token = OperatorToken.generate()

/** The song API's lyrics calls: submissions are recorded and never answered; the record is done. */
const fakeSong = () => {
  const submissions: Array<{ readonly taskId: string; readonly callBackUrl: string | undefined }> = []
  const held: Array<ServerResponse> = []
  const server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? "/", "http://fake")
    if (request.method === "POST" && url.pathname === "/api/v1/lyrics") {
      const chunks: Array<Buffer> = []
      for await (const chunk of request) chunks.push(chunk as Buffer)
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { callBackUrl?: string }
      submissions.push({ taskId: `lyrics-${submissions.length + 1}`, callBackUrl: body.callBackUrl })
      held.push(response)
      return
    }
    const taskId = url.searchParams.get("taskId") ?? ""
    const known = submissions.some((s) => s.taskId === taskId)
    response.setHeader("content-type", "application/json")
    response.end(
      JSON.stringify(
        known
          ? {
              code: 200,
              msg: "success",
              data: { taskId, status: "SUCCESS", response: { data: [{ text: LYRICS, title: "Lease", status: "complete" }] } }
            }
          : { code: 404, msg: "task not found" }
      )
    )
  })
  return {
    submissions,
    start: () =>
      new Promise<string>((resolve) =>
        server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))
      ),
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of held) response.destroy()
        server.close(() => resolve())
      })
  }
}

const upstream = fakeSong()
const upstreamUrl = await upstream.start()

const TestServer = Main.server({
  settings: {
    ...Main.defaults,
    workers: false,
    providerCallbacks: true,
    mediaLinkSecret: Option.some(Redacted.make(SECRET))
  },
  adapters: [Song.make({ apiKey: "test-key", baseUrl: upstreamUrl })],
  pricesFile: Main.pricesFileOf(dataDir),
  token,
  dataDir
}).pipe(
  Layer.provideMerge(
    Layer.mergeAll(
      PgStore.layer({ url: databaseUrl, schema, maxConnections: 4 }),
      BlobStore.layerFileSystem(blobDir),
      OAuthStore.layerMemory
    )
  ),
  Layer.provideMerge(
    Layer.effectDiscard(Effect.addFinalizer(() => Effect.andThen(Effect.promise(upstream.close), dropSchema(schema))))
  ),
  Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir, adminPort: 0 }))
)

const withAdmin = <A, E>(f: (admin: AdminClient.AdminClient["Service"]) => Effect.Effect<A, E>) =>
  Effect.flatMap(Main.adminUrl, (url) => AdminClient.AdminClient.use(f).pipe(Effect.provide(AdminClient.layer({ url, token }))))

const serverUrl = Effect.map(HttpServer.HttpServer, (server) => HttpServer.formatAddress(server.address))

const call = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    return { status: response.status, json: (await response.json()) as any }
  })

/** Starts a worker process; killed (SIGKILL) when the scope closes if it still runs. */
const startWorker = (workerId: string, publicUrl: string) =>
  Effect.acquireRelease(
    Effect.callback<ChildProcess, Error>((resume) => {
      const child = spawn(process.execPath, [WORKER], {
        env: {
          ...Dependencies.childEnv,
          DATABASE_URL: databaseUrl,
          SCHEMA: schema,
          BLOB_DIR: blobDir,
          UPSTREAM_URL: upstreamUrl,
          PUBLIC_URL: publicUrl,
          SECRET,
          WORKER_ID: workerId,
          LEASE_MS: "1000"
        },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let errors = ""
      child.stderr!.on("data", (chunk) => (errors += String(chunk)))
      child.stdout!.on("data", (chunk) => {
        if (String(chunk).includes("ready")) resume(Effect.succeed(child))
      })
      child.on("exit", (code, signal) =>
        resume(Effect.fail(new Error(`worker ${workerId} exited (${code ?? signal}): ${errors}`)))
      )
    }),
    kill
  )

const kill = (child: ChildProcess) =>
  Effect.promise(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, "exit")
    child.kill("SIGKILL")
    await exited
  })

/** Waits (up to 30 s) until `check` holds. */
const eventually = <A>(read: Effect.Effect<A, unknown, any>, check: (value: A) => boolean) =>
  Effect.gen(function* () {
    for (let i = 0; i < 600; i++) {
      const value = yield* read
      if (check(value)) return value
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
    }
    throw new Error("the condition never held")
  })

layer(TestServer, { excludeTestServices: true, timeout: 120_000 })("a worker killed mid-submit, on PostgreSQL", (it) => {
  describe("the task is held, then settled by the upstream's callback", () => {
    it.effect("submitted once, settled through the callback, charged once with the reason on the entry", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const url = yield* serverUrl
          const created = yield* withAdmin((admin) =>
            admin.AccountCreate({ name: "recovery", creditsMicros: (10 * USD) as Money.Micros })
          )
          const accountId = created.account.id as Ids.AccountId
          const first = yield* startWorker("first", url)
          const submitted = yield* call(`${url}/api/v1/jobs`, {
            method: "POST",
            headers: {
              authorization: `Bearer ${created.key.secret}`,
              "content-type": "application/json",
              "idempotency-key": "recovery-1"
            },
            body: JSON.stringify({ model: "song-lyrics", input: { prompt: "a song about leases" } })
          })
          expect(submitted.status).toBe(202)
          const taskId = submitted.json.id as Ids.TaskId

          // The upstream has the job; its answer never comes. Worker A dies waiting for it.
          yield* eventually(
            Effect.sync(() => upstream.submissions.length),
            (n) => n === 1
          )
          yield* kill(first)
          const store = yield* TaskStore.TaskStore
          expect((yield* store.get(accountId, taskId))?.status).toBe("submitting")

          // Worker B takes the lapsed lease; the song API cannot be searched, so it holds the task.
          yield* startWorker("second", url)
          const held = yield* eventually(
            Effect.flatMap(
              withAdmin((admin) => admin.TaskList({ status: "reconciliation_required" })),
              (page) => Effect.succeed(page.tasks.find((t) => t.id === taskId))
            ),
            (t) => t !== undefined
          )
          expect(held!.upstreamAnswer).toMatch(/a worker stopped while submitting.*cannot look jobs up by reference/)
          expect(held!.upstreamRef).toBeNull()

          // The upstream calls back on the URL worker A sent; the server's Reconciler settles the task.
          const job = upstream.submissions[0]!
          expect(job.callBackUrl).toMatch(new RegExp(`^${url}/callbacks/v1/${accountId}/${taskId}/`))
          const callback = yield* call(job.callBackUrl!, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({
              code: 200,
              msg: "All generated successfully.",
              data: { callbackType: "complete", task_id: job.taskId }
            })
          })
          expect(callback).toMatchObject({ status: 200, json: { taskId, status: "succeeded", settled: true } })

          const shown = yield* call(`${url}/api/v1/jobs/${taskId}`, {
            headers: { authorization: `Bearer ${created.key.secret}` }
          })
          expect(shown.json).toMatchObject({ status: "succeeded", assets: [{ type: "text", text: `Lease\n\n${LYRICS}\n` }] })
          expect((yield* store.get(accountId, taskId))?.upstreamRef).toBe(job.taskId)
          expect(upstream.submissions).toHaveLength(1)

          const ledger = yield* LedgerStore.LedgerStore
          const entries = (yield* ledger.entries(accountId, { limit: 100 }))!.entries.filter((e) => e.taskId === taskId)
          expect(entries.filter((e) => e.kind === "charge").map((e) => e.note)).toEqual([
            `provider callback: upstream job ${job.taskId} succeeded`
          ])
          expect(yield* ledger.audit).toEqual([])
        })
      )
    )
  })
})
