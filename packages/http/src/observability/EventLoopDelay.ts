/**
 * How late this process's event loop ran, for /metrics: a timer every RESOLUTION_MS (while the
 * scope lasts) records by how much it ran late in a histogram, read and reset at each scrape into
 * the kernel's `taskmeter_event_loop_delay_seconds` gauge by `stat` (p50, p99, max) for the time
 * since the previous scrape; 0 before the timer first ran.
 */
import { createHistogram } from "node:perf_hooks"
import { Effect, Metric } from "effect"
import { Metrics } from "@taskmeter/kernel"

const RESOLUTION_MS = 10

const series = {
  p50: Metric.withAttributes(Metrics.eventLoopDelay, { stat: "p50" }),
  p99: Metric.withAttributes(Metrics.eventLoopDelay, { stat: "p99" }),
  max: Metric.withAttributes(Metrics.eventLoopDelay, { stat: "max" })
}

/** Watches the loop until the scope closes; the effect it gives sets the gauge and starts a new interval. */
export const monitor = Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => {
      const histogram = createHistogram()
      let lastMs = performance.now()
      const timer = setInterval(() => {
        const nowMs = performance.now()
        // In microseconds, at least 1 (what the histogram takes).
        histogram.record(Math.max(1, Math.round((nowMs - lastMs - RESOLUTION_MS) * 1000)))
        lastMs = nowMs
      }, RESOLUTION_MS).unref()
      return { histogram, timer }
    }),
    ({ timer }) => Effect.sync(() => clearInterval(timer))
  ),
  ({ histogram }) =>
    Effect.suspend(() => {
      const seconds = (microseconds: number) => (histogram.count === 0 ? 0 : microseconds / 1e6)
      const p50 = seconds(histogram.percentile(50))
      const p99 = seconds(histogram.percentile(99))
      const max = seconds(histogram.max)
      histogram.reset()
      return Effect.all([Metric.update(series.p50, p50), Metric.update(series.p99, p99), Metric.update(series.max, max)], {
        discard: true
      })
    })
)
