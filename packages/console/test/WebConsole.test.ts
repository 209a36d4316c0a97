/**
 * The console's routes on an HttpRouter of their own: every page answers the HTML shell under a
 * same-origin CSP, the bundle's files are served by hash with a year's immutable caching (built
 * once), unknown files are 404, and paths that are not pages are left to the router.
 */
import { createServer } from "node:http"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { NodeHttpServer } from "@effect/platform-node"
import { describe, expect, layer } from "@effect/vitest"
import { Pages, WebConsole } from "@taskmeter/console"

const served = HttpRouter.serve(WebConsole.layer, { disableLogger: true, disableListenLog: true }).pipe(
  Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
)

const get = (path: string) =>
  Effect.flatMap(HttpServer.HttpServer, (server) =>
    Effect.promise(async () => {
      const response = await fetch(`${HttpServer.formatAddress(server.address)}${path}`)
      return { status: response.status, headers: response.headers, body: new Uint8Array(await response.arrayBuffer()) }
    })
  )

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

layer(served, { timeout: 60_000, excludeTestServices: true })("the console's routes", (it) => {
  describe("pages and files", () => {
    it.effect("answers every page with the shell, which names hashed files served for a year", () =>
      Effect.gen(function* () {
        const shells = new Set<string>()
        for (const path of Pages.PATHS) {
          const page = yield* get(path.replace(":id", "task_0"))
          expect(page.status).toBe(200)
          expect(page.headers.get("content-type")).toMatch(/^text\/html/)
          expect(page.headers.get("content-security-policy")).toContain("default-src 'self'")
          expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
          shells.add(text(page.body))
        }
        expect(shells.size).toBe(1)
        const shell = [...shells][0]!
        const files = [...shell.matchAll(/\/console\/assets\/([a-z]+-[0-9a-f]{16}\.(?:js|css))/gu)].map((match) => match[1]!)
        expect(files.map((file) => file.split(".").pop()).sort()).toEqual(["css", "js"])
        expect(shell).not.toMatch(/https?:\/\//u)
        for (const file of files) {
          const asset = yield* get(`${Pages.ASSETS_PREFIX}${file}`)
          expect(asset.status).toBe(200)
          expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
          expect(asset.body.length).toBeGreaterThan(1000)
          expect(text(asset.body)).not.toMatch(/from\s*["']node:/u)
        }
        // Built once: a second shell names the same files.
        expect(text((yield* get("/")).body)).toBe(shell)
      })
    )

    it.effect("answers 404 for a file it did not build and leaves other paths to the router", () =>
      Effect.gen(function* () {
        expect((yield* get(`${Pages.ASSETS_PREFIX}app-0000000000000000.js`)).status).toBe(404)
        expect((yield* get("/api/v1/anything")).status).toBe(404)
        expect((yield* get("/not-a-page")).status).toBe(404)
      })
    )
  })
})
