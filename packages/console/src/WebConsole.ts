/**
 * The customer console as routes on the HttpRouter in context: GET of every page in Pages.PATHS
 * answers the HTML shell, GET under Pages.ASSETS_PREFIX the bundled files (immutable, by hash;
 * gzipped for browsers that accept it).
 * The bundle is built once, at the first request for any of them (not at start, so servers and
 * tests that never open the console pay nothing). The console has no endpoint of its own: the
 * browser app calls the public API.
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import * as Bundle from "./Bundle.ts"
import { ASSETS_PREFIX, PATHS } from "./Pages.ts"
import * as Shell from "./Shell.ts"

const IMMUTABLE = "public, max-age=31536000, immutable"

export const layer = Layer.unwrap(
  Effect.gen(function* () {
    const built = yield* Effect.cached(Effect.promise(Bundle.build))
    const page = Effect.map(built, (files) =>
      HttpServerResponse.html(Shell.html(files)).pipe(
        HttpServerResponse.setHeaders({
          "content-security-policy": Shell.CONTENT_SECURITY_POLICY,
          "referrer-policy": "same-origin",
          "x-frame-options": "DENY"
        })
      )
    )
    const asset = Effect.gen(function* () {
      const { file } = yield* HttpRouter.params
      const request = yield* HttpServerRequest.HttpServerRequest
      const files = yield* built
      const found = [files.script, files.style].find((candidate) => candidate.name === file)
      if (found === undefined) return HttpServerResponse.text("No such console file.", { status: 404 })
      const gzip = /\bgzip\b/u.test(request.headers["accept-encoding"] ?? "")
      return HttpServerResponse.uint8Array(gzip ? found.gzipped : found.bytes, {
        contentType: found.contentType,
        headers: {
          "cache-control": IMMUTABLE,
          vary: "accept-encoding",
          ...(gzip ? { "content-encoding": "gzip" } : {})
        }
      })
    })
    return HttpRouter.use((router) =>
      Effect.gen(function* () {
        for (const path of PATHS) yield* router.add("GET", path, page)
        yield* router.add("GET", `${ASSETS_PREFIX}:file`, asset)
      })
    )
  })
)
