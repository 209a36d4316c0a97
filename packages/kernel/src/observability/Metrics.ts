/**
 * The service's metrics, defined once as effect `Metric`s (the admin listener serves them in
 * Prometheus text format): HTTP traffic, admissions, the queue, tasks, upstream calls, credits
 * and chat. Names carry their unit; labels are bounded sets (routes, models, codes, families),
 * never ids. `record*` helpers keep the instrumented services to one line each.
 */
import { Effect, Metric } from "effect"

/** Seconds, from a millisecond to an hour: requests, statements, upstream calls, tasks. */
const SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600]

/**
 * How to make a labelled series of a metric as a metric of its own. A series made by
 * `withAttributes` shares its metric's one cached registry key, so updating two series of a
 * metric in turn would rebuild (sort and serialize) that key on every update.
 */
const siblings = new WeakMap<
  Metric.Metric<number, unknown>,
  (attributes: Metric.Metric.Attributes) => Metric.Metric<number, unknown>
>()

type CounterOptions = Omit<NonNullable<Parameters<typeof Metric.counter>[1]>, "bigint" | "attributes">
type HistogramOptions = Omit<Parameters<typeof Metric.histogram>[1], "attributes">

const counter = (name: string, options: CounterOptions): Metric.Counter<number> => {
  const metric = Metric.counter(name, options)
  siblings.set(metric, (attributes) => Metric.counter(name, { ...options, attributes }))
  return metric
}

const histogram = (name: string, options: HistogramOptions): Metric.Histogram<number> => {
  const metric = Metric.histogram(name, options)
  siblings.set(metric, (attributes) => Metric.histogram(name, { ...options, attributes }))
  return metric
}

export const httpRequests = counter("taskmeter_http_requests_total", {
  description: "HTTP requests answered, by route, method and status",
  incremental: true
})

export const httpRequestDuration = histogram("taskmeter_http_request_duration_seconds", {
  description: "Time to answer an HTTP request, by route and method",
  boundaries: SECONDS
})

export const admissions = counter("taskmeter_admissions_total", {
  description: "Task submissions by outcome: admitted, replayed, or the refusal's error code",
  incremental: true
})

export const queueDepth = Metric.gauge("taskmeter_queue_depth", {
  description: "Unfinished tasks by status and model, read from the store at scrape time"
})

export const claimDuration = histogram("taskmeter_claim_duration_seconds", {
  description: "Time of one claim statement of a worker",
  boundaries: SECONDS
})

export const queueWait = histogram("taskmeter_queue_wait_seconds", {
  description: "Time from admission to a worker's first claim, by model",
  boundaries: SECONDS
})

export const taskDuration = histogram("taskmeter_task_duration_seconds", {
  description: "Time from admission to the end, by model and outcome (the final status)",
  boundaries: SECONDS
})

export const providerCalls = counter("taskmeter_provider_calls_total", {
  description: "Calls of a provider adapter (submit, poll, lookup, cancel), by family, step and result",
  incremental: true
})

export const providerCallDuration = histogram("taskmeter_provider_call_duration_seconds", {
  description: "Time of one provider adapter call, by family and step",
  boundaries: SECONDS
})

export const creditsReserved = counter("taskmeter_credits_reserved_micros_total", {
  description: "Credits reserved by admitted tasks, USD micros",
  incremental: true
})

export const creditsCharged = counter("taskmeter_credits_charged_micros_total", {
  description: "Credits charged for finished tasks and chat requests, USD micros, by kind",
  incremental: true
})

export const creditsReleased = counter("taskmeter_credits_released_micros_total", {
  description: "Reserved credits released back to the account, USD micros, by kind",
  incremental: true
})

export const chatTokens = counter("taskmeter_chat_tokens_total", {
  description: "Chat tokens billed, by model and kind (prompt, completion)",
  incremental: true
})

export const chatRequests = counter("taskmeter_chat_requests_total", {
  description: "Chat requests settled, by model and outcome",
  incremental: true
})

export const chatShortfall = counter("taskmeter_chat_shortfall_micros_total", {
  description: "What chat usage cost beyond its reservation and was not charged, USD micros, by model",
  incremental: true
})

export const dbPoolConnections = Metric.gauge("taskmeter_db_pool_connections", {
  description: "Database connections of this process by state (in_use, max), read at scrape time"
})

export const eventLoopDelay = Metric.gauge("taskmeter_event_loop_delay_seconds", {
  description:
    "How late this process's event loop ran since the previous scrape, by stat (p50, p99, max), in seconds, read at scrape time"
})

const secondsSince = (startedMs: number, nowMs: number): number => Math.max(0, nowMs - startedMs) / 1000

/**
 * Each labelled series, made once (as a sibling metric when one can be made): a series keeps its
 * registry key, which a fresh `withAttributes` recomputes (sorting and serializing its labels) on every update.
 */
const seriesCache = new Map<string, Metric.Metric<number, unknown>>()

const seriesOf = <M extends Metric.Metric<number, unknown>>(metric: M, labels: Metric.Metric.Attributes): M => {
  let key = metric.id
  if (Array.isArray(labels)) for (const [name, value] of labels) key += `\u0000${name}=${value}`
  else for (const name in labels) key += `\u0000${name}=${(labels as Record<string, string>)[name]}`
  let series = seriesCache.get(key)
  if (series === undefined) {
    series = siblings.get(metric)?.(labels) ?? Metric.withAttributes(metric, labels)
    seriesCache.set(key, series)
  }
  return series as M
}

/** Adds `amount` to a counter's series with these labels. */
export const count = (metric: Metric.Counter<number>, labels: Metric.Metric.Attributes, amount = 1): Effect.Effect<void> =>
  amount === 0 ? Effect.void : Metric.update(seriesOf(metric, labels), amount)

/** Records the seconds since `startedMs` in a histogram's series with these labels. */
export const observeSince = (
  metric: Metric.Histogram<number>,
  labels: Metric.Metric.Attributes,
  startedMs: number
): Effect.Effect<void> =>
  Effect.clockWith((clock) => Metric.update(seriesOf(metric, labels), secondsSince(startedMs, clock.currentTimeMillisUnsafe())))

/** Runs `effect`, recording its duration in `metric` with these labels whatever its outcome. */
export const timed =
  (metric: Metric.Histogram<number>, labels: Metric.Metric.Attributes) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.clockWith((clock) => {
      const started = clock.currentTimeMillisUnsafe()
      return Effect.onExit(effect, () => observeSince(metric, labels, started))
    })
