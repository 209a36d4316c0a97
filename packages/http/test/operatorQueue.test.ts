/**
 * The operator queue over the admin RPC on the composed server (storage-memory, no workers):
 * `TaskList` shows held tasks with their age, model, price and last upstream answer; `TaskResolve`
 * attaches results (a link fetched under the address policy, msw serving it; an uploaded file)
 * that the public API then serves, and every resolution's entries carry the operator's reason.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { afterAll, afterEach, beforeAll, describe, expect, layer } from "@effect/vitest"
import { http, HttpResponse } from "msw"
import { setupServer } from "msw/node"
import { AddressPolicy, type Ids, LedgerStore, type Money, TaskStore } from "@taskmeter/kernel"
import { OAuthStore } from "@taskmeter/mcp"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as AdminClient from "../src/admin/AdminClient.ts"
import { AdminError } from "../src/admin/AdminRpc.ts"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import * as Main from "../src/main.ts"
import * as ServerConfig from "../src/ServerConfig.ts"
import { HeldTask } from "@taskmeter/kernel/testing"

const USD = 1_000_000
const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-queue-"))
const token = OperatorToken.generate()

/** Result links under `.upstream.test` resolve to a public address; msw answers the fetch. */
const upstreamDns: AddressPolicy.Policy = {
  allowLoopbackForTests: false,
  resolve: async (hostname) => {
    if (hostname.endsWith(".upstream.test")) return [{ address: "93.184.215.14", family: 4 }]
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" })
  }
}

const TestServer = Main.server({
  settings: { ...Main.defaults, workers: false },
  adapters: [],
  pricesFile: Main.pricesFileOf(dataDir),
  token,
  dataDir
}).pipe(
  Layer.provideMerge(Layer.merge(MemoryStore.layer, OAuthStore.layerMemory)),
  Layer.provide(Layer.succeed(AddressPolicy.AddressPolicy, upstreamDns)),
  Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir, adminPort: 0 }))
)

const upstream = setupServer()
beforeAll(() => upstream.listen({ onUnhandledFrame: "bypass" }))
afterEach(() => upstream.resetHandlers())
afterAll(() => upstream.close())

const withAdmin = <A, E>(f: (admin: AdminClient.AdminClient["Service"]) => Effect.Effect<A, E>) =>
  Effect.flatMap(Main.adminUrl, (url) => AdminClient.AdminClient.use(f).pipe(Effect.provide(AdminClient.layer({ url, token }))))

const reasonOf = <A, R>(effect: Effect.Effect<A, unknown, R>) =>
  Effect.map(Effect.flip(effect), (error) => (error instanceof AdminError ? error.reason : error))

/** GET on the public API with the account's key: status and body (JSON when it is). */
const apiGet = (path: string, secret: string) =>
  Effect.flatMap(HttpServer.HttpServer, (server) =>
    Effect.promise(async () => {
      const response = await fetch(`${HttpServer.formatAddress(server.address)}${path}`, {
        headers: { authorization: `Bearer ${secret}` }
      })
      const bytes = new Uint8Array(await response.arrayBuffer())
      return { status: response.status, contentType: response.headers.get("content-type"), bytes }
    })
  )

layer(TestServer, { excludeTestServices: true })("operator queue", (it) => {
  describe("task list", () => {
    it.effect("lists held tasks by id with age, model, price and last answer; pages; other statuses are refused", () =>
      Effect.gen(function* () {
        const { account } = yield* withAdmin((admin) =>
          admin.AccountCreate({ name: "queue", creditsMicros: (10 * USD) as Money.Micros })
        )
        const answer = "submit: the connection closed after the request was sent (ECONNRESET)"
        const ids = [
          yield* HeldTask.make(account.id, 2 * USD, "song-lyrics", answer),
          yield* HeldTask.make(account.id, USD, "song-single-v5")
        ]
        const all = yield* withAdmin((admin) => admin.TaskList({ status: "reconciliation_required" }))
        const mine = all.tasks.filter((t) => ids.includes(t.id as Ids.TaskId))
        expect(mine.map((t) => t.id)).toEqual([...ids].sort())
        const first = mine.find((t) => t.id === ids[0])!
        expect(first).toMatchObject({
          accountId: account.id,
          model: "song-lyrics",
          priceMicros: 2 * USD,
          status: "reconciliation_required",
          errorCode: "OUTCOME_UNKNOWN",
          upstreamRef: null,
          upstreamAnswer: answer
        })
        expect(first.ageSeconds).toBeGreaterThanOrEqual(0)
        expect(mine.find((t) => t.id === ids[1])).toMatchObject({ model: "song-single-v5", upstreamAnswer: null })

        const one = yield* withAdmin((admin) => admin.TaskList({ status: "reconciliation_required", limit: 1 }))
        expect(one.tasks).toHaveLength(1)
        expect(one.next).toBe(one.tasks[0]!.id)
        const rest = yield* withAdmin((admin) =>
          admin.TaskList({ status: "reconciliation_required", limit: 100, after: one.next! })
        )
        expect(rest.tasks.map((t) => t.id)).toEqual(all.tasks.slice(1).map((t) => t.id))
        expect(rest.next).toBeNull()
      })
    )
  })

  describe("task resolve", () => {
    it.effect("succeeded attaches a fetched link and an uploaded file, charges, notes the reason; the API serves them", () =>
      Effect.gen(function* () {
        const created = yield* withAdmin((admin) =>
          admin.AccountCreate({ name: "resolved", creditsMicros: (5 * USD) as Money.Micros })
        )
        const accountId = created.account.id
        const taskId = yield* HeldTask.make(accountId, 2 * USD, "song-single-v5")
        const track = new Uint8Array([73, 68, 51, 4, 0, 0, 1, 2, 3])
        upstream.use(
          http.get("https://cdn.upstream.test/track-1.mp3", () =>
            HttpResponse.arrayBuffer(track.buffer, { headers: { "content-type": "audio/mpeg" } })
          )
        )
        const second = Buffer.from("second track bytes")

        // Succeeded without results, and failed with them, are refused; nothing moves.
        expect(
          yield* reasonOf(
            withAdmin((admin) => admin.TaskResolve({ taskId, accountId, outcome: "succeeded", reason: "confirmed upstream" }))
          )
        ).toBe("InvalidRequest")
        expect(
          yield* reasonOf(
            withAdmin((admin) =>
              admin.TaskResolve({
                taskId,
                accountId,
                outcome: "failed",
                reason: "x",
                results: [{ url: "https://cdn.upstream.test/track-1.mp3", contentType: "audio/mpeg" }]
              })
            )
          )
        ).toBe("InvalidRequest")
        // A link the address policy refuses attaches nothing and leaves the task held.
        expect(
          yield* reasonOf(
            withAdmin((admin) =>
              admin.TaskResolve({
                taskId,
                accountId,
                outcome: "succeeded",
                reason: "confirmed upstream",
                results: [{ url: "http://127.0.0.1/track.mp3", contentType: "audio/mpeg" }]
              })
            )
          )
        ).toBe("ResultUnavailable")
        expect((yield* (yield* TaskStore.TaskStore).get(accountId as Ids.AccountId, taskId))?.status).toBe(
          "reconciliation_required"
        )

        const resolved = yield* withAdmin((admin) =>
          admin.TaskResolve({
            taskId,
            accountId,
            outcome: "succeeded",
            reason: "ticket 42: upstream support sent the tracks",
            results: [
              { url: "https://cdn.upstream.test/track-1.mp3", contentType: "audio/mpeg" },
              { base64: second.toString("base64"), contentType: "audio/mpeg" }
            ]
          })
        )
        expect(resolved).toMatchObject({ status: "succeeded", chargedMicros: 2 * USD, errorCode: null })

        const job = yield* apiGet(`/api/v1/jobs/${taskId}`, created.key.secret)
        expect(job.status).toBe(200)
        const shown = JSON.parse(new TextDecoder().decode(job.bytes)) as {
          status: string
          assets: Array<{ type: string; url: string }>
        }
        expect(shown.status).toBe("succeeded")
        expect(shown.assets.map((a) => a.type)).toEqual(["audio", "audio"])
        const downloads = yield* Effect.forEach(shown.assets, (a) =>
          apiGet(new URL(a.url, "http://x").pathname, created.key.secret)
        )
        expect(downloads.map((d) => [d.status, Buffer.from(d.bytes).toString("hex")])).toEqual([
          [200, Buffer.from(track).toString("hex")],
          [200, second.toString("hex")]
        ])

        const ledger = yield* LedgerStore.LedgerStore
        const entries = (yield* ledger.entries(accountId as Ids.AccountId, { limit: 100 }))!.entries.filter(
          (e) => e.taskId === taskId && e.kind !== "reserve"
        )
        expect(entries.map((e) => [e.kind, e.amountMicros, e.note])).toEqual([
          ["charge", 2 * USD, "resolved by operator: ticket 42: upstream support sent the tracks"]
        ])
        expect(yield* ledger.audit).toEqual([])
      })
    )

    it.effect("failed releases the reservation with the reason on the release entry; the books balance", () =>
      Effect.gen(function* () {
        const { account } = yield* withAdmin((admin) =>
          admin.AccountCreate({ name: "released", creditsMicros: (5 * USD) as Money.Micros })
        )
        const taskId = yield* HeldTask.make(account.id, USD)
        const failed = yield* withAdmin((admin) =>
          admin.TaskResolve({ taskId, outcome: "failed", reason: "upstream has no record of the job" })
        )
        expect(failed).toMatchObject({ status: "failed", chargedMicros: null })
        const ledger = yield* LedgerStore.LedgerStore
        const entries = (yield* ledger.entries(account.id as Ids.AccountId, { limit: 100 }))!.entries.filter(
          (e) => e.taskId === taskId && e.kind !== "reserve"
        )
        expect(entries.map((e) => [e.kind, e.amountMicros, e.note])).toEqual([
          ["release", USD, "resolved by operator: upstream has no record of the job"]
        ])
        expect(yield* ledger.balances(account.id as Ids.AccountId)).toMatchObject({
          balanceMicros: 5 * USD,
          reservedMicros: 0
        })
        expect(yield* ledger.audit).toEqual([])
        expect(yield* reasonOf(withAdmin((admin) => admin.TaskResolve({ taskId, outcome: "failed", reason: "again" })))).toBe(
          "TaskNotResolvable"
        )
      })
    )
  })
})
