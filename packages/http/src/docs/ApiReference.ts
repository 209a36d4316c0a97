/**
 * The API reference page at GET /docs: the served OpenAPI document rendered in the browser by
 * Scalar's standalone bundle (`@scalar/api-reference`), which this server serves itself from
 * node_modules at /docs/scalar-<version>.js (gzipped when accepted, cached for good: the version
 * is in the path). Nothing is loaded from elsewhere: no CDN, Scalar's remote fonts, telemetry, AI
 * agent and MCP integration off, and a Content-Security-Policy that lets the page reach its own
 * origin only (and the public URL's, where its test requests go). Operations marked `x-internal`
 * are not shown.
 */
import { createHash } from "node:crypto"
import { readFile } from "node:fs/promises"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { gzip } from "node:zlib"
import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { PublicUrl } from "../PublicUrl.ts"

export const PATH = "/docs"

/** `dist/` of the installed @scalar/api-reference (its exports name no browser bundle). */
const scalarDist = dirname(fileURLToPath(import.meta.resolve("@scalar/api-reference")))

/** Scalar's options: everything that would reach a third party is off. */
const configuration = (documentPath: string) => ({
  url: documentPath,
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  // Its button opens Scalar's hosted client with this document's URL; "Test Request" stays in the page.
  hideClientButton: true,
  showDeveloperTools: "never",
  documentDownloadType: "json",
  defaultOpenAllTags: true,
  metaData: { title: "taskmeter API reference" }
})

const sha256 = (text: string) => createHash("sha256").update(text).digest("base64")

const page = (documentPath: string, bundlePath: string, publicUrl: string | undefined) => {
  const start = `Scalar.createApiReference("#app", ${JSON.stringify(configuration(documentPath))})`
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>taskmeter API reference</title>
</head>
<body>
<noscript>The reference needs JavaScript. The OpenAPI document is at <a href="${documentPath}">${documentPath}</a>.</noscript>
<div id="app"></div>
<script src="${bundlePath}"></script>
<script>${start}</script>
</body>
</html>
`
  const policy = [
    "default-src 'none'",
    `script-src 'self' 'sha256-${sha256(start)}'`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    publicUrl === undefined ? "connect-src 'self'" : `connect-src 'self' ${new URL(publicUrl).origin}`,
    "worker-src 'self' blob:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'"
  ].join("; ")
  return { html, policy }
}

const loadBundle = Effect.promise(async () => {
  const plain = await readFile(join(scalarDist, "browser", "standalone.js"))
  return { plain, gzipped: await promisify(gzip)(plain) }
})

/** GET /docs and the bundle, for the OpenAPI document served at `documentPath`. */
export const layer = (documentPath: string) =>
  HttpRouter.use((router) =>
    Effect.gen(function* () {
      const { version } = yield* Effect.promise(
        async () => JSON.parse(await readFile(join(scalarDist, "..", "package.json"), "utf8")) as { version: string }
      )
      const bundlePath = `${PATH}/scalar-${version}.js` as const
      const { html, policy } = page(documentPath, bundlePath, yield* PublicUrl)
      const bundle = yield* Effect.cached(loadBundle)
      yield* router.add(
        "GET",
        PATH,
        HttpServerResponse.text(html, {
          contentType: "text/html; charset=utf-8",
          headers: { "content-security-policy": policy }
        })
      )
      yield* router.add(
        "GET",
        bundlePath,
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const { plain, gzipped } = yield* bundle
          const compressed = /\bgzip\b/.test(request.headers["accept-encoding"] ?? "")
          return HttpServerResponse.uint8Array(compressed ? gzipped : plain, {
            contentType: "text/javascript; charset=utf-8",
            headers: {
              "cache-control": "public, max-age=31536000, immutable",
              vary: "accept-encoding",
              ...(compressed ? { "content-encoding": "gzip" } : {})
            }
          })
        })
      )
    })
  )
