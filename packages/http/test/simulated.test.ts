/**
 * What the API says about the simulated provider, on the composed server (Main.server over
 * storage-memory, in-process workers): models and tasks name their provider, and under
 * SIMULATED_PRICE=zero a simulated task costs nothing, through the ledger's usual entries.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { describe, expect, it, layer } from "@effect/vitest"
import { Accounts, Ledger, Money } from "@taskmeter/kernel"
import { OAuthStore } from "@taskmeter/mcp"
import { Simulated } from "@taskmeter/providers"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import * as Main from "../src/main.ts"
import * as ServerConfig from "../src/ServerConfig.ts"

const SIMULATED_MODEL = "song-lyrics"
const UNSERVED_MODEL = "alpha-2-lite-text-to-image-economy"
const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-simulated-"))

const TestServer = Main.server({
  settings: { ...Main.defaults, simulatedPrice: "zero" },
  adapters: [Simulated.make({ models: [SIMULATED_MODEL] })],
  pricesFile: Main.pricesFileOf(dataDir),
  token: OperatorToken.generate(),
  dataDir
}).pipe(
  Layer.provideMerge(Layer.merge(MemoryStore.layer, OAuthStore.layerMemory)),
  Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir, adminPort: 0 }))
)

const api = (path: string, key?: string, init: RequestInit = {}) =>
  Effect.flatMap(HttpServer.HttpServer, (server) =>
    Effect.promise(async () => {
      const response = await fetch(`${HttpServer.formatAddress(server.address)}${path}`, {
        ...init,
        headers: {
          ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
          "content-type": "application/json",
          ...init.headers
        }
      })
      return { status: response.status, body: (await response.json()) as any }
    })
  )

layer(TestServer, { excludeTestServices: true })("the simulated provider in the API", (it) => {
  describe("SIMULATED_PRICE=zero", () => {
    it.effect("models name their provider; a simulated model is listed and quoted at zero", () =>
      Effect.gen(function* () {
        const models = (yield* api("/api/v1/models")).body.models as Array<{ slug: string; provider: string | null }>
        expect(models.find((m) => m.slug === SIMULATED_MODEL)?.provider).toBe("simulated")
        expect(models.find((m) => m.slug === UNSERVED_MODEL)?.provider).toBeNull()
        const prices = (yield* api("/api/v1/prices")).body.models as Array<{ model: string; priceMicros: number | null }>
        expect(prices.find((p) => p.model === SIMULATED_MODEL)?.priceMicros).toBe(0)
        expect(prices.find((p) => p.model === UNSERVED_MODEL)?.priceMicros).toBeGreaterThan(0)
      })
    )

    it.effect(
      "a simulated task says so, costs nothing, and leaves zero entries in the ledger; its lyrics are inline, not a download",
      () =>
        Effect.gen(function* () {
          const { account, key } = yield* Accounts.Accounts.use((accounts) =>
            accounts.create({ name: "sim", credits: Money.micros(5_000_000) })
          )
          const submitted = yield* api("/api/v1/jobs", key.secret, {
            method: "POST",
            headers: { "idempotency-key": "sim-1" },
            body: JSON.stringify({ model: SIMULATED_MODEL, input: { prompt: "a song about ledgers" }, expectedPriceMicros: 0 })
          })
          expect(submitted.status).toBe(202)
          expect(submitted.body.priceMicros).toBe(0)
          let task = submitted.body
          for (let i = 0; i < 200 && task.status !== "succeeded" && task.status !== "failed"; i++) {
            yield* Effect.sleep("25 millis")
            task = (yield* api(`/api/v1/jobs/${task.id}`, key.secret)).body
          }
          expect(task.status).toBe("succeeded")
          expect(task.provider).toBe("simulated")
          const [lyrics] = task.assets
          expect(lyrics).toMatchObject({ type: "text", text: expect.any(String) })
          expect(lyrics.url).toBeUndefined()
          expect(lyrics.id).toMatch(/^text_/)
          const download = yield* api(`/api/v1/results/${lyrics.id}`, key.secret)
          expect(download.status).toBe(404)
          expect(download.body).toEqual({
            code: "JOB_NOT_FOUND",
            error: `${lyrics.id} is a text asset: it has no file to download. Its content is the asset's \`text\` in the task (GET /api/v1/jobs/{id}).`
          })

          const ledger = yield* Ledger.Ledger
          const balances = yield* ledger.balances(account.id)
          expect(balances).toMatchObject({ balanceMicros: 5_000_000, reservedMicros: 0 })
          const entries = (yield* ledger.usage(account.id, { limit: 100 })).entries.filter((entry) => entry.taskId === task.id)
          expect(entries.map((entry) => [entry.kind, entry.amountMicros]).sort()).toEqual([
            ["charge", 0],
            ["reserve", 0]
          ])

          const unserved = yield* api("/api/v1/jobs", key.secret, {
            method: "POST",
            headers: { "idempotency-key": "unserved-1" },
            body: JSON.stringify({ model: UNSERVED_MODEL, input: { prompt: "a lighthouse" } })
          })
          expect(unserved.status).toBe(503)
          expect(unserved.body.code).toBe("EXECUTION_UNAVAILABLE")
        })
    )
  })
})

describe("the start banner's providers line", () => {
  it("names live, simulated and unavailable families (a family partly served is in both)", () => {
    const line = Main.providersLine([Simulated.make({ models: [SIMULATED_MODEL] })], { simulatedPrice: "zero" })
    expect(line).toBe(
      "live: none; simulated: song (SIMULATED_PRICE=zero); " +
        "unavailable (no upstream, SIMULATED_ENABLED off): alpha, picgen, gamma, delta, epsilon, song"
    )
  })
})
