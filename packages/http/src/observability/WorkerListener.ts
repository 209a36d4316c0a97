/**
 * The listener of a `taskmeter worker` process, when WORKER_METRICS_PORT is set: GET /metrics as the
 * admin listener serves it (MetricsScrape, METRICS_TOKEN alike) and GET /healthz and /readyz
 * (Health: readiness asks the store and the worker's heartbeat). Any other route is 404 NOT_FOUND.
 * `serve` listens until its scope closes and answers the bound address.
 */
import { createServer } from "node:http"
import { Data, Effect, Layer, type Redacted, type Scope } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import type { NetAddress } from "effect/net"
import { NodeHttpServer } from "@effect/platform-node"
import type { StoreHealth } from "@taskmeter/kernel"
import * as ErrorResponse from "../ErrorResponse.ts"
import * as ResponseHeaders from "../ResponseHeaders.ts"
import * as Health from "./Health.ts"
import * as MetricsScrape from "./MetricsScrape.ts"

export interface Options {
  /** WORKER_METRICS_HOST */
  readonly host: string
  /** WORKER_METRICS_PORT; 0 picks a free port. */
  readonly port: number
  /** METRICS_TOKEN: what a scraper presents as `Authorization: Bearer`; none: /metrics is open. */
  readonly metricsToken?: Redacted.Redacted<string> | undefined
}

/** The listener could not listen (most often: another worker on this host has the port). */
export class WorkerListenError extends Data.TaggedError("WorkerListenError")<{
  readonly message: string
  readonly cause: unknown
}> {}

const codeOf = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : String(cause)

const metricsRoute = (metricsToken: Redacted.Redacted<string> | undefined) =>
  HttpRouter.use((router) =>
    Effect.flatMap(MetricsScrape.handler(metricsToken), (metrics) =>
      router.add("GET", MetricsScrape.PATH, Effect.flatMap(HttpServerRequest.HttpServerRequest, metrics))
    )
  )

/** Serves /metrics, /healthz and /readyz on `options.host` and `options.port` until the scope closes. */
export const serve = (
  options: Options
): Effect.Effect<NetAddress.SocketAddress, WorkerListenError, StoreHealth.StoreHealth | Scope.Scope> =>
  Effect.gen(function* () {
    const routes = yield* HttpRouter.toHttpEffect(Layer.merge(Health.layer, metricsRoute(options.metricsToken)))
    const handler = routes.pipe(Effect.catchCause(ErrorResponse.fromCause), Effect.map(ResponseHeaders.withDefaults))
    const server = yield* NodeHttpServer.make(createServer, { host: options.host, port: options.port }).pipe(
      Effect.mapError(
        (error) =>
          new WorkerListenError({
            message:
              `The worker's metrics listener cannot listen on ${options.host}:${options.port} (${codeOf(error.cause)}): ` +
              "give each worker on one host its own WORKER_METRICS_PORT, or 0 (a free port, printed at start).",
            cause: error.cause
          })
      )
    )
    yield* server.serve(handler)
    return server.address
  })
