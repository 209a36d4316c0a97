/**
 * A task's trace context across processes: at admission the submitting request's span is kept
 * as a W3C `traceparent` with the task (only when it is sampled: with tracing off nothing is
 * kept), and the worker that runs the task, in any process, links its spans to it.
 */
import { Effect, Option, Tracer } from "effect"
import { Headers, HttpTraceContext } from "effect/http"

/**
 * The current span as a `traceparent`, if it is sampled and exported (a tracer other than effect's
 * native one, which exports nothing); undefined otherwise, so that nothing is kept for nobody.
 */
export const current: Effect.Effect<string | undefined> = Effect.flatMap(Effect.service(Tracer.Tracer), (tracer) =>
  tracer === Tracer.nativeTracer
    ? Effect.undefined
    : Effect.map(Effect.option(Effect.currentSpan), (span) =>
        Option.isSome(span) && span.value.sampled ? HttpTraceContext.toHeaders(span.value).traceparent : undefined
      )
)

/** A link to the span a stored `traceparent` names; none for a missing or malformed one. */
export const linksOf = (traceparent: string | null | undefined): ReadonlyArray<Tracer.SpanLink> => {
  if (traceparent === null || traceparent === undefined) return []
  return Option.match(HttpTraceContext.w3c(Headers.fromRecordUnsafe({ traceparent })), {
    onNone: () => [],
    onSome: (span) => [{ span, attributes: { "taskmeter.link": "submission" } }]
  })
}
