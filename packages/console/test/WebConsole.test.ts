/**
 * The console's routes on an HttpRouter of their own: every page answers the HTML shell under a
 * same-origin CSP, the bundle's files are served by hash with a year's immutable caching (built
 * once; gzipped when asked), unknown files are 404, and paths that are not pages are left to the
 * router.
 */
import { createServer, request } from "node:http"
import { gunzipSync } from "node:zlib"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { NodeHttpServer } from "@effect/platform-node"
import { describe, expect, layer } from "@effect/vitest"
import { Pages, WebConsole } from "@taskmeter/console"

const served = HttpRouter.serve(WebConsole.layer, { disableLogger: true, disableListenLog: true }).pipe(
  Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
)

/** GET with Node's http client, which leaves the body as sent; `gzip` asks for it compressed. */
const get = (path: string, gzip = false) =>
  Effect.flatMap(HttpServer.HttpServer, (server) =>
    Effect.promise(
      () =>
        new Promise<{ status: number; headers: Record<string, string | undefined>; body: Uint8Array }>((resolve, reject) => {
          const url = `${HttpServer.formatAddress(server.address)}${path}`
          request(url, { headers: gzip ? { "accept-encoding": "gzip" } : {} }, (response) => {
            const chunks: Array<Buffer> = []
            response.on("data", (chunk: Buffer) => chunks.push(chunk))
            response.on("end", () =>
              resolve({
                status: response.statusCode ?? 0,
                headers: response.headers as Record<string, string | undefined>,
                body: Buffer.concat(chunks)
              })
            )
          })
            .on("error", reject)
            .end()
        })
    )
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
          expect(page.headers["content-type"]).toMatch(/^text\/html/)
          expect(page.headers["content-security-policy"]).toContain("default-src 'self'")
          expect(page.headers["content-security-policy"]).toContain("frame-ancestors 'none'")
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
          expect(asset.headers["cache-control"]).toBe("public, max-age=31536000, immutable")
          expect(asset.headers["content-encoding"]).toBeUndefined()
          expect(asset.body.length).toBeGreaterThan(1000)
          expect(text(asset.body)).not.toMatch(/from\s*["']node:/u)
          const gzipped = yield* get(`${Pages.ASSETS_PREFIX}${file}`, true)
          expect(gzipped.headers["content-encoding"]).toBe("gzip")
          expect(gzipped.headers.vary).toBe("accept-encoding")
          expect(gzipped.body.length).toBeLessThan(asset.body.length)
          expect(new Uint8Array(gunzipSync(gzipped.body))).toEqual(new Uint8Array(asset.body))
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
