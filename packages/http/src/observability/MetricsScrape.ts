/**
 * GET /metrics on the admin listener: the process's effect metrics (kernel/Metrics) in Prometheus
 * text format, after setting the gauges read at scrape time: queue depth by status and model
 * (one bounded query) and this process's database connections. A series that disappears from
 * the queue is set to 0, not dropped, so that rates and alerts see it end.
 */
import { Effect, Metric } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { Metrics, StoreHealth } from "@taskmeter/kernel"

export const PATH = "/metrics"

export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

/** Sets the scrape-time gauges, then formats every metric; the series of `seen` last time are kept in it. */
const make = Effect.gen(function* () {
  const health = yield* StoreHealth.StoreHealth
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
  return Effect.andThen(Effect.all([queue, connections], { concurrency: 2, discard: true }), PrometheusMetrics.format())
})

/** The scrape: the text of every metric, the gauges just read. */
export const scraper: Effect.Effect<Effect.Effect<string>, never, StoreHealth.StoreHealth> = make
