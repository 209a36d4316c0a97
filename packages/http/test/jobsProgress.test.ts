/**
 * Progress on the composed server (Main.server over storage-memory, in-process workers, the
 * simulated provider holding video jobs Pending for a while): through the eventsource client a
 * video task's stream carries `event: progress` ({ id, progress }, no event id) while it runs,
 * before its final `task` event, and GET shows `progress` only while the task runs.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { expect, layer } from "@effect/vitest"
import { EventSource } from "eventsource"
import { Accounts, Money } from "@taskmeter/kernel"
import { OAuthStore } from "@taskmeter/mcp"
import { Simulated } from "@taskmeter/providers"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import * as Main from "../src/main.ts"
import * as ServerConfig from "../src/ServerConfig.ts"

const VIDEO = "delta-omni-flash-text-to-video-economy"
const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-progress-"))

const TestServer = Main.server({
  settings: { ...Main.defaults, simulatedPrice: "zero" },
  adapters: [Simulated.make({ models: [VIDEO], delayMs: { video: 2_500 } })],
  pricesFile: Main.pricesFileOf(dataDir),
  token: OperatorToken.generate(),
  dataDir
}).pipe(
  Layer.provideMerge(Layer.merge(MemoryStore.layer, OAuthStore.layerMemory)),
  Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir, adminPort: 0 }))
)

const baseUrl = HttpServer.HttpServer.use((server) => Effect.succeed(HttpServer.formatAddress(server.address)))

interface Received {
  readonly type: string
  readonly id: string
  readonly data: any
}

layer(TestServer, { excludeTestServices: true })("progress of a running task", (it) => {
  it.effect("a video task's stream gives progress events while it runs, before its final task event", () =>
    Effect.gen(function* () {
      const { key } = yield* Accounts.Accounts.use((accounts) =>
        accounts.create({ name: "progress", credits: Money.micros(5_000_000) })
      )
      const base = yield* baseUrl
      const auth = { authorization: `Bearer ${key.secret}` }
      const task = yield* Effect.promise(async () => {
        const response = await fetch(`${base}/api/v1/jobs`, {
          method: "POST",
          headers: { ...auth, "content-type": "application/json", "idempotency-key": "progress-1" },
          body: JSON.stringify({ model: VIDEO, input: { prompt: "waves" }, expectedPriceMicros: 0 })
        })
        expect(response.status).toBe(202)
        return (await response.json()) as { id: string }
      })
      const received: Array<Received> = []
      const shownWhileRunning: Array<any> = []
      const source = new EventSource(`${base}/api/v1/jobs/${task.id}/events`, {
        fetch: (input, init) => fetch(input, { ...init, headers: { ...init?.headers, ...auth } })
      })
      yield* Effect.promise(
        () =>
          new Promise<void>((resolve) => {
            for (const type of ["status", "progress", "task"]) {
              source.addEventListener(type, (event) => {
                received.push({ type, id: event.lastEventId, data: JSON.parse(event.data) })
                if (type === "progress") {
                  void fetch(`${base}/api/v1/jobs/${task.id}`, { headers: auth })
                    .then((response) => response.json())
                    .then((shown) => shownWhileRunning.push(shown))
                }
                if (type === "task") resolve()
              })
            }
          })
      ).pipe(Effect.timeout("20 seconds"))
      source.close()

      const types = received.map((event) => event.type)
      const progresses = received.filter((event) => event.type === "progress")
      expect(progresses.length).toBeGreaterThan(0)
      expect(types.indexOf("progress")).toBeGreaterThan(types.indexOf("status"))
      expect(types.at(-1)).toBe("task")
      for (const event of progresses) {
        expect(Object.keys(event.data).sort()).toEqual(["id", "progress"])
        expect(event.data.id).toBe(task.id)
        expect(Number.isInteger(event.data.progress) && event.data.progress >= 0 && event.data.progress <= 100).toBe(true)
        // Unnumbered: the client's last event id stays the running status's.
        expect(event.id).toBe("3")
      }
      // Each progress event is a change.
      const values = progresses.map((event) => event.data.progress)
      expect(new Set(values).size).toBe(values.length)
      const final = received.at(-1)?.data
      expect(final.status).toBe("succeeded")
      expect(final.progress).toBeUndefined()
      const running = shownWhileRunning.find((shown) => shown.status === "running")
      expect(running?.progress).toEqual(expect.any(Number))
    })
  )
})
