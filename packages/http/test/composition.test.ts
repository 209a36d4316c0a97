import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { Errors } from "@taskmeter/kernel"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

/** Routes another package mounts beside the API. */
const beside = Layer.mergeAll(
  HttpRouter.add("GET", "/extra/ok", HttpServerResponse.jsonUnsafe({ ok: true })),
  HttpRouter.add(
    "GET",
    "/extra/busy",
    Effect.fail(new Errors.UpstreamRateLimited({ message: "slow down", retryAfterSeconds: 7 }))
  ),
  HttpRouter.add("GET", "/extra/bug", Effect.die(new Error("a bug")))
)

layer(T.layer(stores[0]!, { beside }), { excludeTestServices: true })("routes mounted beside the API", (it) => {
  describe("Server.layer merged with other route layers", () => {
    it.effect("serves both, and gives the other routes' errors the same { code, error } shape", () =>
      Effect.gen(function* () {
        expect((yield* T.call("/extra/ok")).body).toEqual({ ok: true })
        expect((yield* T.call("/api/v1/prices")).status).toBe(200)
        const busy = yield* T.call("/extra/busy")
        expect(busy.status).toBe(429)
        expect(busy.body).toEqual({ code: "UPSTREAM_RATE_LIMITED", error: "slow down" })
        expect(busy.headers.get("retry-after")).toBe("7")
        const bug = yield* T.call("/extra/bug")
        expect(bug.status).toBe(503)
        expect(bug.body.code).toBe("API_UNAVAILABLE")
      })
    )
  })
})
