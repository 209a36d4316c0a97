import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { HttpServer } from "effect/http"
import { expect, layer } from "@effect/vitest"
import { AdminClient, Main, OperatorToken } from "@taskmeter/http"
import { Money } from "@taskmeter/kernel"
import { serverLayer } from "./server.ts"

const token = OperatorToken.generate()

layer(serverLayer({ port: 0, adminPort: 0, dataDir: mkdtempSync(join(tmpdir(), "taskmeter-example-")), token }), {
  excludeTestServices: true
})("examples/http-server", (it) => {
  it.effect("serves the API and the admin service; a new account's task runs on the simulated provider", () =>
    Effect.gen(function* () {
      const url = HttpServer.formatAddress((yield* HttpServer.HttpServer).address)
      const { key } = yield* AdminClient.AdminClient.use((admin) =>
        admin.AccountCreate({ name: "example", creditsMicros: Money.micros(1_000_000) })
      ).pipe(Effect.provide(AdminClient.layer({ url: yield* Main.adminUrl, token })))
      const call = (path: string, init: RequestInit = {}) =>
        Effect.promise(() =>
          fetch(`${url}${path}`, { ...init, headers: { "x-api-key": key.secret, ...init.headers } }).then(
            (r) => r.json() as Promise<any>
          )
        )
      const task = yield* call("/api/v1/jobs", {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": "example" },
        body: JSON.stringify({ model: "song-lyrics", input: { prompt: "an example" } })
      })
      expect(task.status).toBe("queued")
      let current = task
      while (current.status === "queued" || current.status === "submitting" || current.status === "running") {
        yield* Effect.sleep("100 millis")
        current = yield* call(`/api/v1/jobs/${task.id}`)
      }
      expect(current.status).toBe("succeeded")
      expect(current.assets[0].text).toEqual(expect.any(String))
    })
  )
})
