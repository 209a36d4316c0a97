/**
 * A submit whose answer is lost, per real family, end to end on PostgreSQL: the composed server
 * with its worker and the family's real adapter, the upstream mocked with msw. The garbled answer
 * holds the task in reconciliation_required (the operator queue shows why); the upstream's callback
 * to the per-task URL it was sent names the job, the Reconciler polls it and settles the task at
 * once, and the API serves the result. Forged, replayed and after-the-end callbacks change nothing.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { afterAll, afterEach, beforeAll, describe, expect, layer } from "@effect/vitest"
import { http, HttpResponse } from "msw"
import { setupServer } from "msw/node"
import { AddressPolicy, BlobStore, Catalog, type Ids, LedgerStore, type Money, TaskStore } from "@taskmeter/kernel"
import { OAuthStore } from "@taskmeter/mcp"
import { Alpha, Epsilon, Picgen, Song } from "@taskmeter/providers"
import { SampleInputs } from "@taskmeter/providers/testing"
import { PgStore } from "@taskmeter/storage-pg"
import * as AdminClient from "../src/admin/AdminClient.ts"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import * as Main from "../src/main.ts"
import * as ServerConfig from "../src/ServerConfig.ts"
import { databaseUrl, dropSchema, schemaName } from "./support/stores.ts"

const USD = 1_000_000
const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-callbacks-"))
const token = OperatorToken.generate()
const CDN = "https://cdn.upstream.test/results"
const BYTES = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3, 4])
/** The start of a JSON answer cut short: the upstream took the job, its answer is unreadable. */
const GARBLED = '{"code":200,"msg":"success","data":{"taskId'

/** One upstream job as the fakes keep it: its id, and the callback URL it was sent. */
interface Job {
  readonly id: string
  readonly callbackUrl: string | undefined
}

interface Family {
  readonly name: string
  readonly model: string
  readonly assets: number
  readonly jobs: Array<Job>
  /** What the upstream POSTs to the callback URL once the job is done. */
  readonly callbackBody: (job: Job) => unknown
}

const MARKET = "https://market.upstream.test"
const FAL = "https://fal.upstream.test"
const REPLICATE = "https://replicate.upstream.test"
const SONG = "https://song.upstream.test"

const market: Family = {
  name: "the task market (alpha)",
  model: "alpha-2-text-to-image-economy",
  assets: 1,
  jobs: [],
  callbackBody: (job) => ({ code: 200, msg: "success", data: { taskId: job.id, state: "success" } })
}
const fal: Family = {
  name: "the fal queue (epsilon)",
  model: "epsilon-3-1-fast-text-to-video-channel-low-price",
  assets: 1,
  jobs: [],
  callbackBody: (job) => ({ request_id: job.id, status: "OK", payload: {} })
}
const replicate: Family = {
  name: "Replicate (picgen)",
  model: "picgen-2-5-sunburst-text-to-image-economy",
  assets: 1,
  jobs: [],
  callbackBody: (job) => ({ id: job.id, status: "succeeded", output: [`${CDN}/${job.id}.png`] })
}
const song: Family = {
  name: "the song API (song)",
  model: "song-single-v5",
  assets: 2,
  jobs: [],
  callbackBody: (job) => ({ code: 200, msg: "All generated successfully.", data: { callbackType: "complete", task_id: job.id } })
}

const families = [market, fal, replicate, song]

/** The market's behaviour: garble submit answers (default), or answer them and run jobs until `done`. */
const marketMode = { answerSubmits: false, done: true }

const created = (family: Family, callbackUrl: unknown) => {
  const job = {
    id: `${family.model.split("-")[0]}-job-${family.jobs.length + 1}`,
    callbackUrl: callbackUrl as string | undefined
  }
  family.jobs.push(job)
  return job
}

const known = (family: Family, id: string) => family.jobs.some((job) => job.id === id)

const upstream = setupServer(
  http.post(`${MARKET}/api/v1/jobs/createTask`, async ({ request }) => {
    const job = created(market, ((await request.json()) as { callBackUrl?: string }).callBackUrl)
    return marketMode.answerSubmits
      ? HttpResponse.json({ code: 200, msg: "success", data: { taskId: job.id } })
      : new HttpResponse(GARBLED, { headers: { "content-type": "application/json" } })
  }),
  http.get(`${MARKET}/api/v1/jobs/recordInfo`, ({ request }) => {
    const taskId = new URL(request.url).searchParams.get("taskId") ?? ""
    if (!known(market, taskId)) return HttpResponse.json({ code: 404, msg: "task not found" })
    if (!marketMode.done) return HttpResponse.json({ code: 200, msg: "success", data: { taskId, state: "generating" } })
    const resultJson = JSON.stringify({ resultUrls: [`${CDN}/${taskId}.png`] })
    return HttpResponse.json({ code: 200, msg: "success", data: { taskId, state: "success", resultJson } })
  }),
  http.get(`${FAL}/:owner/:app/requests/:id/status`, ({ params }) =>
    known(fal, String(params["id"]))
      ? HttpResponse.json({ status: "COMPLETED" })
      : HttpResponse.json({ detail: "Request not found" }, { status: 404 })
  ),
  http.get(`${FAL}/:owner/:app/requests/:id`, ({ params }) =>
    HttpResponse.json({ video: { url: `${CDN}/${String(params["id"])}.mp4`, content_type: "video/mp4" } })
  ),
  http.post(`${FAL}/*`, ({ request }) => {
    created(fal, new URL(request.url).searchParams.get("fal_webhook") ?? undefined)
    return new HttpResponse(GARBLED, { headers: { "content-type": "application/json" } })
  }),
  http.post(`${REPLICATE}/v1/models/:owner/:name/predictions`, async ({ request }) => {
    created(replicate, ((await request.json()) as { webhook?: string }).webhook)
    return new HttpResponse(GARBLED, { status: 201, headers: { "content-type": "application/json" } })
  }),
  http.get(`${REPLICATE}/v1/predictions/:id`, ({ params }) => {
    const id = String(params["id"])
    return known(replicate, id)
      ? HttpResponse.json({ id, status: "succeeded", output: [`${CDN}/${id}.png`] })
      : HttpResponse.json({ detail: "Not found." }, { status: 404 })
  }),
  http.post(`${SONG}/api/v1/generate`, async ({ request }) => {
    created(song, ((await request.json()) as { callBackUrl?: string }).callBackUrl)
    return new HttpResponse(GARBLED, { headers: { "content-type": "application/json" } })
  }),
  http.get(`${SONG}/api/v1/generate/record-info`, ({ request }) => {
    const taskId = new URL(request.url).searchParams.get("taskId") ?? ""
    if (!known(song, taskId)) return HttpResponse.json({ code: 404, msg: "task not found" })
    const sunoData = [1, 2].map((n) => ({ id: `${taskId}-${n}`, audioUrl: `${CDN}/${taskId}-${n}.mp3`, title: "Fox" }))
    return HttpResponse.json({ code: 200, msg: "success", data: { taskId, status: "SUCCESS", response: { sunoData } } })
  }),
  http.get(`${CDN}/:file`, () => HttpResponse.arrayBuffer(BYTES.slice().buffer, { headers: { "content-type": "image/png" } }))
)
beforeAll(() => upstream.listen({ onUnhandledFrame: "bypass" }))
afterEach(() => {
  for (const family of families) family.jobs.length = 0
  Object.assign(marketMode, { answerSubmits: false, done: true })
})
afterAll(() => upstream.close())

/** Result links under `.upstream.test` resolve to a public address; msw answers the fetch. */
const upstreamDns: AddressPolicy.Policy = {
  allowLoopbackForTests: false,
  resolve: async (hostname) => {
    if (hostname.endsWith(".upstream.test")) return [{ address: "93.184.215.14", family: 4 }]
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" })
  }
}

const options = { apiKey: "test-key" }
const schema = schemaName("callbacks")
const postgres = Layer.mergeAll(
  PgStore.layer({ url: databaseUrl, schema, maxConnections: 6 }),
  BlobStore.layerFileSystem(mkdtempSync(join(tmpdir(), "taskmeter-callback-blobs-")))
).pipe(Layer.provideMerge(Layer.effectDiscard(Effect.addFinalizer(() => dropSchema(schema)))))

const TestServer = Main.server({
  settings: { ...Main.defaults, workers: true, providerCallbacks: true },
  adapters: [
    Alpha.make({ ...options, baseUrl: MARKET }),
    Epsilon.make({ ...options, baseUrl: FAL }),
    Picgen.make({ ...options, baseUrl: REPLICATE }),
    Song.make({ ...options, baseUrl: SONG })
  ],
  pricesFile: Main.pricesFileOf(dataDir),
  token,
  dataDir
}).pipe(
  Layer.provideMerge(Layer.merge(postgres, OAuthStore.layerMemory)),
  Layer.provide(Layer.succeed(AddressPolicy.AddressPolicy, upstreamDns)),
  Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir, adminPort: 0 }))
)

const withAdmin = <A, E>(f: (admin: AdminClient.AdminClient["Service"]) => Effect.Effect<A, E>) =>
  Effect.flatMap(Main.adminUrl, (url) => AdminClient.AdminClient.use(f).pipe(Effect.provide(AdminClient.layer({ url, token }))))

const call = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    const bytes = new Uint8Array(await response.arrayBuffer())
    const text = new TextDecoder().decode(bytes)
    return { status: response.status, bytes, json: (/^[[{]/.test(text) ? JSON.parse(text) : undefined) as any }
  })

const api = (path: string, secret: string, init: RequestInit = {}) =>
  Effect.flatMap(HttpServer.HttpServer, (server) =>
    call(`${HttpServer.formatAddress(server.address)}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${secret}`, ...init.headers }
    })
  )

const postJson = (url: string, body: unknown) =>
  call(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

/** Waits (up to 20 s) until the task is in `status`. */
const awaitStatus = (accountId: string, taskId: Ids.TaskId, status: string) =>
  Effect.gen(function* () {
    const store = yield* TaskStore.TaskStore
    for (let i = 0; i < 400; i++) {
      const task = yield* store.get(accountId as Ids.AccountId, taskId)
      if (task?.status === status) return task
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
    }
    throw new Error(`task ${taskId} never reached ${status}`)
  })

/** A funded account, and a task of `model` submitted through the API with its sample input. */
const submit = (model: string) =>
  Effect.gen(function* () {
    const created = yield* withAdmin((admin) => admin.AccountCreate({ name: model, creditsMicros: (50 * USD) as Money.Micros }))
    const catalog = yield* Catalog.Catalog
    const input = SampleInputs.sampleInput(yield* catalog.get(model))
    const submitted = yield* api("/api/v1/jobs", created.key.secret, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": `callback-${model}-${Date.now()}` },
      body: JSON.stringify({ model, input })
    })
    expect(submitted.status).toBe(202)
    return { accountId: created.account.id, secret: created.key.secret, taskId: submitted.json.id as Ids.TaskId }
  })

layer(TestServer, { excludeTestServices: true, timeout: 120_000 })("provider callbacks on PostgreSQL", (it) => {
  it.effect("a callback settles a task the worker is following at once, charged once; another job is refused", () =>
    Effect.gen(function* () {
      Object.assign(marketMode, { answerSubmits: true, done: false })
      const { accountId, secret, taskId } = yield* submit(market.model)
      const running = yield* awaitStatus(accountId, taskId, "running")
      const job = market.jobs[0]!
      expect(running.upstreamRef).toBe(job.id)

      // A callback naming another job is refused while the task runs.
      const other = yield* postJson(job.callbackUrl!, market.callbackBody({ id: "mkt-job-other", callbackUrl: undefined }))
      expect([other.status, other.json?.code]).toEqual([400, "INVALID_REQUEST"])
      // Still running upstream: the callback leaves the task to the worker.
      const early = yield* postJson(job.callbackUrl!, market.callbackBody(job))
      expect(early).toMatchObject({ status: 202, json: { status: "running", settled: false } })

      marketMode.done = true
      // Settled when the callback answers (by the callback itself, unless the worker's next poll
      // happened to land in the few milliseconds between the job ending and the callback).
      const settled = yield* postJson(job.callbackUrl!, market.callbackBody(job))
      expect(settled).toMatchObject({ status: 200, json: { taskId, status: "succeeded" } })
      const shown = yield* api(`/api/v1/jobs/${taskId}`, secret)
      expect(shown.json).toMatchObject({ status: "succeeded", assets: [{ type: "image" }] })

      const ledger = yield* LedgerStore.LedgerStore
      const entries = (yield* ledger.entries(accountId as Ids.AccountId, { limit: 100 }))!.entries.filter(
        (e) => e.taskId === taskId
      )
      expect(entries.map((e) => e.kind).sort()).toEqual(["charge", "reserve"])
      expect(yield* ledger.audit).toEqual([])
    })
  )

  describe.each(families)("$name", (family) => {
    it.effect("a lost submit answer is held, then the callback settles the task at once; the API serves it", () =>
      Effect.gen(function* () {
        const { accountId, secret, taskId } = yield* submit(family.model)
        const held = yield* awaitStatus(accountId, taskId, "reconciliation_required")
        expect(held.upstreamRef).toBeNull()

        // The operator queue shows what the upstream answered.
        const queue = yield* withAdmin((admin) => admin.TaskList({ status: "reconciliation_required" }))
        expect(queue.tasks.find((t) => t.id === taskId)?.upstreamAnswer).toMatch(/^submit: the upstream accepted/)

        // The upstream got the job once, with our task's own callback URL.
        expect(family.jobs).toHaveLength(1)
        const job = family.jobs[0]!
        expect(job.callbackUrl).toMatch(new RegExp(`/callbacks/v1/${accountId}/${taskId}/[A-Za-z0-9_-]{43}$`))
        const callbackUrl = job.callbackUrl!

        // Forged: another token, another task's token, another account: 404 and nothing changes.
        const forged = [
          callbackUrl.replace(/[A-Za-z0-9_-]{43}$/, "A".repeat(43)),
          callbackUrl.replace(/[A-Za-z0-9_-]{43}$/, ""),
          callbackUrl.replace(accountId, "acct_00000000-0000-4000-8000-000000000000")
        ]
        for (const url of forged) {
          expect((yield* postJson(url, family.callbackBody(job))).status).toBeGreaterThanOrEqual(400)
        }
        const unrelated = yield* postJson(callbackUrl, { unrelated: true })
        expect([unrelated.status, unrelated.json?.code]).toEqual([400, "INVALID_REQUEST"])
        expect((yield* awaitStatus(accountId, taskId, "reconciliation_required")).upstreamRef).toBeNull()

        const settled = yield* postJson(callbackUrl, family.callbackBody(job))
        expect(settled).toMatchObject({ status: 200, json: { taskId, status: "succeeded", settled: true } })
        // A replay, after the end: 200, nothing changes.
        const replayed = yield* postJson(callbackUrl, family.callbackBody(job))
        expect(replayed).toMatchObject({ status: 200, json: { status: "succeeded", settled: false } })

        const shown = yield* api(`/api/v1/jobs/${taskId}`, secret)
        expect(shown.json).toMatchObject({ id: taskId, status: "succeeded" })
        expect(shown.json.assets).toHaveLength(family.assets)
        const download = yield* api(new URL(shown.json.assets[0].url, "http://x").pathname, secret)
        expect(download.status).toBe(200)
        expect(Buffer.from(download.bytes).equals(Buffer.from(BYTES))).toBe(true)
        expect(family.jobs).toHaveLength(1)

        const ledger = yield* LedgerStore.LedgerStore
        const page = yield* ledger.entries(accountId as Ids.AccountId, { limit: 100 })
        const charge = page!.entries.find((e) => e.taskId === taskId && e.kind === "charge")
        expect(charge?.note).toBe(
          `provider callback: upstream job ${(yield* TaskStore.TaskStore.use((s) => s.get(accountId as Ids.AccountId, taskId)))!.upstreamRef} succeeded`
        )
        expect(yield* ledger.audit).toEqual([])
      })
    )
  })
})
