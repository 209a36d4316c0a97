/**
 * The middleware every API request passes through, outermost: it takes or makes the request id
 * (RequestId; the router's error shaping echoes it, `withRequestId`), annotates the request's logs and span with it, gives the kernel a
 * fresh RequestFacts, and once answered counts the request and its latency by route (the matched
 * route's pattern, never the raw path) and writes the one access line unless switched off.
 */
import { Context, Effect, Metric } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Metrics, RequestFacts } from "@taskmeter/kernel"
import * as RequestId from "./RequestId.ts"

export interface Options {
  /** One log line per request (ACCESS_LOG). */
  readonly accessLog: boolean
}

/** The current request's id, for the router's last step to echo (a response changed here is not sent). */
export const CurrentRequestId = Context.Reference<string | undefined>("@taskmeter/http/CurrentRequestId", {
  defaultValue: () => undefined
})

/** The response with the current request's `X-Request-Id`, when there is one. */
export const withRequestId = (response: HttpServerResponse.HttpServerResponse) =>
  Effect.map(Effect.service(CurrentRequestId), (requestId) =>
    requestId === undefined ? response : HttpServerResponse.setHeader(response, RequestId.HEADER, requestId)
  )

/** The route label of an unmatched request (404): bounded, unlike its path. */
const UNMATCHED = "unmatched"

const routeOf = (context: Context.Context<never>): string =>
  Context.getOrUndefined(context as Context.Context<HttpRouter.RouteContext>, HttpRouter.RouteContext)?.route.path ?? UNMATCHED

/** The request counter and latency series of each route, method and status, made once each. */
const seriesCache = new Map<string, { readonly requests: Metric.Counter<number>; readonly latency: Metric.Histogram<number> }>()

/** Methods a label may name; any other is `other`, so that no client can add series at will. */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

const seriesOf = (route: string, requestMethod: string, status: number) => {
  const method = METHODS.has(requestMethod) ? requestMethod : "other"
  const key = `${route} ${method} ${status}`
  let series = seriesCache.get(key)
  if (series === undefined) {
    series = {
      requests: Metric.withAttributes(Metrics.httpRequests, { route, method, status: String(status) }),
      latency: Metric.withAttributes(Metrics.httpRequestDuration, { route, method })
    }
    seriesCache.set(key, series)
  }
  return series
}

export const middleware =
  (options: Options) =>
  <E, R>(
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
    Effect.withFiber((fiber) => {
      const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
      const requestId = RequestId.of(request.headers[RequestId.HEADER])
      const facts: RequestFacts.Facts = {}
      const started = performance.now()
      let route = UNMATCHED
      const routed = Effect.withFiber((inner) =>
        Effect.onExit(app, () =>
          Effect.sync(() => {
            route = routeOf(inner.context)
          })
        )
      )
      return routed.pipe(
        Effect.provideService(RequestFacts.CurrentFacts, facts),
        Effect.provideService(CurrentRequestId, requestId),
        Effect.annotateLogs({ requestId }),
        Effect.tap(() => Effect.annotateCurrentSpan("http.request_id", requestId)),
        Effect.flatMap((response) => {
          const status = response.status
          const seconds = (performance.now() - started) / 1000
          const series = seriesOf(route, request.method, status)
          const recorded = Effect.andThen(Metric.update(series.requests, 1), Metric.update(series.latency, seconds))
          const logged = options.accessLog
            ? Effect.annotateLogs(Effect.log("request"), {
                requestId,
                method: request.method,
                route,
                status,
                durationMs: Math.round(seconds * 1000),
                ...(facts.accountId === undefined ? {} : { accountId: facts.accountId }),
                ...(facts.taskId === undefined ? {} : { taskId: facts.taskId })
              })
            : Effect.void
          return Effect.as(Effect.andThen(recorded, logged), response)
        })
      )
    })
