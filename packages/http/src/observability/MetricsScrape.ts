/**
 * GET /metrics on the admin listener (and a worker process's listener): the process's effect
 * metrics (kernel/Metrics) in Prometheus text format, behind METRICS_TOKEN when one is set, after
 * setting the gauges read at scrape time: queue depth by status and model (one bounded query),
 * this process's database connections and how late its event loop ran since the previous scrape
 * (EventLoopDelay). A series that disappears from the queue is set to 0, not
 * dropped, so that rates and alerts see it end.
 */
import { Effect, Metric, type Redacted, type Scope } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import { Errors, Metrics, StoreHealth } from "@taskmeter/kernel"
import * as OperatorToken from "../admin/OperatorToken.ts"
import * as ErrorResponse from "../ErrorResponse.ts"
import * as EventLoopDelay from "./EventLoopDelay.ts"
import * as ResponseHeaders from "../ResponseHeaders.ts"

export const PATH = "/metrics"

export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

/** Sets the scrape-time gauges, then formats every metric; the series of `seen` last time are kept in it. */
const make = Effect.gen(function* () {
  const health = yield* StoreHealth.StoreHealth
  const eventLoopDelay = yield* EventLoopDelay.monitor
  const seen = new Map<string, { readonly status: string; readonly model: string }>()
  const depth = (labels: { readonly status: string; readonly model: string }, tasks: number) =>
    Metric.update(Metric.withAttributes(Metrics.queueDepth, labels), tasks)
  const queue = Effect.gen(function* () {
    const rows = yield* health.queueDepth
    const now = new Set<string>()
    for (const row of rows) {
      const key = `${row.status} ${row.model}`
      now.add(key)
      seen.set(key, { status: row.status, model: row.model })
      yield* depth({ status: row.status, model: row.model }, row.tasks)
    }
    for (const [key, labels] of seen) if (!now.has(key)) yield* depth(labels, 0)
  }).pipe(Effect.catch((error) => Effect.logWarning("Metrics: the queue depth could not be read", error.message)))
  const connections = Effect.flatMap(health.connections, (pool) =>
    pool === undefined
      ? Effect.void
      : Effect.andThen(
          Metric.update(Metric.withAttributes(Metrics.dbPoolConnections, { state: "in_use" }), pool.inUse),
          Metric.update(Metric.withAttributes(Metrics.dbPoolConnections, { state: "max" }), pool.max)
        )
  )
  return Effect.andThen(
    Effect.all([queue, connections, eventLoopDelay], { concurrency: 3, discard: true }),
    PrometheusMetrics.format()
  )
})

const unauthorized = ErrorResponse.fromError(
  new Errors.AuthRequired({ message: "GET /metrics needs the metrics token: Authorization: Bearer <METRICS_TOKEN>." }),
  { headers: { "www-authenticate": ResponseHeaders.BEARER_CHALLENGE } }
)

/**
 * The answer to GET /metrics: the text of every metric, the gauges just read; 401 AUTH_REQUIRED
 * when `metricsToken` (METRICS_TOKEN) is set and the request does not present it as a Bearer token.
 */
export const handler = (
  metricsToken: Redacted.Redacted<string> | undefined
): Effect.Effect<
  (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse>,
  never,
  StoreHealth.StoreHealth | Scope.Scope
> =>
  Effect.map(make, (scrape) => {
    const verify = metricsToken === undefined ? undefined : OperatorToken.verifier(metricsToken)
    return (request) =>
      verify !== undefined && !verify(OperatorToken.fromAuthorization(request.headers.authorization))
        ? Effect.succeed(unauthorized)
        : Effect.map(scrape, (text) => HttpServerResponse.text(text, { contentType: CONTENT_TYPE }))
  })
