/**
 * Reading upstream JSON: a non-2xx reply becomes its classified error (with the upstream's own
 * explanation when the body carries one), a 2xx body is parsed and validated with an Effect
 * Schema. Malformed means "not JSON" or "not the documented shape"; what that costs depends on
 * the step (see `UpstreamError.malformed`).
 */
import { Clock, Effect, Result, Schema } from "effect"
import type { Provider } from "@taskmeter/kernel"
import type { Reply } from "./HttpClient.ts"
import * as UpstreamError from "./UpstreamError.ts"

/** The human explanation upstreams put in error bodies, under one of the usual names. */
export const messageOf = (text: string): string | undefined => {
  const parsed = Result.try(() => JSON.parse(text) as unknown)
  if (Result.isFailure(parsed)) return text.trim().slice(0, 300) || undefined
  const body = parsed.success
  if (typeof body !== "object" || body === null) return undefined
  for (const key of ["detail", "msg", "message", "error", "failMsg"]) {
    const value = (body as Record<string, unknown>)[key]
    if (typeof value === "string" && value.length > 0) return value.slice(0, 300)
    if (typeof value === "object" && value !== null && "message" in value && typeof value.message === "string") {
      return value.message.slice(0, 300)
    }
  }
  return undefined
}

/** Fails with the classified error unless the reply is 2xx. */
export const expectOk = (reply: Reply): Effect.Effect<Reply, Provider.ProviderError> =>
  reply.status >= 200 && reply.status < 300
    ? Effect.succeed(reply)
    : Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.fail(
          UpstreamError.fromStatus(reply.status, {
            message: messageOf(reply.text),
            retryAfterMs: UpstreamError.parseRetryAfter(reply.headers.get("retry-after"), now)
          })
        )
      )

/** The schemas replies are decoded with: any that needs no services. */
export type Decodable = Schema.Top & { readonly DecodingServices: never }

/** A reply's decoder: `decode` here, `Envelope.decode` for the task-market style envelope. */
export type Decode = <S extends Decodable>(
  schema: S,
  reply: Reply,
  step: UpstreamError.Step,
  what: string
) => Effect.Effect<S["Type"], Provider.ProviderError>

/** Validates a parsed value. */
export const validate = <S extends Decodable>(
  schema: S,
  value: unknown,
  step: UpstreamError.Step,
  what: string
): Effect.Effect<S["Type"], Provider.ProviderError> => {
  const decoded = Schema.decodeUnknownResult(schema)(value)
  return Result.isSuccess(decoded)
    ? Effect.succeed(decoded.success)
    : Effect.fail(UpstreamError.malformed(step, `${what} does not have the documented shape: ${decoded.failure.message}`))
}

/** `expectOk`, then the body parsed as JSON and validated. */
export const decode: Decode = (schema, reply, step, what) =>
  Effect.flatMap(expectOk(reply), (ok) => {
    const parsed = Result.try(() => JSON.parse(ok.text) as unknown)
    return Result.isFailure(parsed)
      ? Effect.fail(UpstreamError.malformed(step, `${what} is not JSON`, parsed.failure))
      : validate(schema, parsed.success, step, what)
  })
