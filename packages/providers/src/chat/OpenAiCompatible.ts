/**
 * A chat upstream for any API speaking the common chat-completion protocol (`POST
 * {baseUrl}/chat/completions`, Bearer key, SSE), each of our models mapped to an upstream id. Calls
 * go over node:http(s) on a keep-alive pool (UpstreamPost); the cap is sent as `max_tokens` or
 * `max_completion_tokens` (`capParameter`), streams ask for usage. Timeouts (`requestTimeoutMs`,
 * `firstByteTimeoutMs`, `idleTimeoutMs`) and failures map onto ChatProvider's reasons.
 */
import type { IncomingMessage } from "node:http"
import { Array as Arr, Cause, Clock, Effect, Redacted, Scope, Stream } from "effect"
import { constVoid } from "effect/Function"
import { ChatProvider } from "@taskmeter/kernel"
import type { TokenUsage } from "@taskmeter/kernel"
import * as BodyPull from "./BodyPull.ts"
import { parseRetryAfter } from "../utils/UpstreamError.ts"
import * as Sse from "./Sse.ts"
import * as UpstreamPost from "./UpstreamPost.ts"

type Json = ChatProvider.Json
type JsonObject = ChatProvider.JsonObject

export interface Options {
  /** The name the chat price list's `provider` uses for models served here. */
  readonly provider: string
  /** Up to and including the version segment, e.g. `https://api.example.com/v1`. */
  readonly baseUrl: string
  readonly apiKey?: string | Redacted.Redacted<string> | undefined
  /** Our chat model id -> the upstream's model id; an unlisted model keeps its id. */
  readonly models?: { readonly [chatModel: string]: string } | undefined
  readonly capParameter?: "max_tokens" | "max_completion_tokens" | undefined
  readonly headers?: { readonly [name: string]: string } | undefined
  readonly connectTimeoutMs?: number | undefined
  readonly requestTimeoutMs?: number | undefined
  readonly firstByteTimeoutMs?: number | undefined
  readonly idleTimeoutMs?: number | undefined
  /** Pooled connections to the upstream. Default 128. */
  readonly connections?: number | undefined
  /** Largest non-streamed reply read. Default 16 MiB. */
  readonly maxReplyBytes?: number | undefined
}

const fail = (
  reason: ChatProvider.ChatProviderErrorReason,
  message: string,
  extra: {
    readonly status?: number | undefined
    readonly retryAfterSeconds?: number | undefined
    readonly cause?: unknown
  } = {}
) => new ChatProvider.ChatProviderError({ reason, message, ...extra })

const isObject = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

const count = (u: unknown): number | undefined => (typeof u === "number" && Number.isSafeInteger(u) && u >= 0 ? u : undefined)

/** Usage as upstreams report it; undefined unless both counts are sound. */
export const usageOf = (u: unknown): TokenUsage.TokenUsage | undefined => {
  if (!isObject(u)) return undefined
  const promptTokens = count(u.prompt_tokens)
  const completionTokens = count(u.completion_tokens)
  return promptTokens === undefined || completionTokens === undefined ? undefined : { promptTokens, completionTokens }
}

/** The upstream's own explanation of an error body, when it has one. */
const explain = (text: string): string => {
  try {
    const body: unknown = JSON.parse(text)
    if (isObject(body)) {
      const error = body.error
      if (isObject(error) && typeof error.message === "string") return error.message
      if (typeof error === "string") return error
      if (typeof body.message === "string") return body.message
    }
  } catch {
    // Not JSON: show the start of the text.
  }
  return text.slice(0, 300)
}

export const classifyStatus = (status: number, body: string, retryAfter: string | null, nowMs: number) => {
  const detail = `the upstream answered ${status}${body.length > 0 ? `: ${explain(body)}` : ""}`
  if (status === 429) {
    const ms = parseRetryAfter(retryAfter, nowMs)
    return fail("RateLimited", detail, {
      status,
      ...(ms === undefined ? {} : { retryAfterSeconds: Math.max(1, Math.ceil(ms / 1000)) })
    })
  }
  if (status === 400 || status === 413 || status === 422) return fail("InvalidRequest", explain(body) || detail, { status })
  return fail("Unavailable", detail, { status })
}

/** One parsed stream event: its deltas and usage; an error event fails. */
const eventParts = (data: string): ReadonlyArray<ChatProvider.ChatStreamPart> | ChatProvider.ChatProviderError => {
  let event: unknown
  try {
    event = JSON.parse(data)
  } catch (cause) {
    return fail("Unavailable", "the upstream sent a stream event that is not JSON", { cause })
  }
  if (!isObject(event)) return fail("Unavailable", "the upstream sent a stream event that is not an object")
  if (event.error !== undefined && event.error !== null) {
    return fail("Unavailable", `the upstream broke off the stream: ${explain(JSON.stringify(event))}`)
  }
  const parts: Array<ChatProvider.ChatStreamPart> = []
  const choice = Array.isArray(event.choices) ? event.choices.find((c) => isObject(c) && (c.index ?? 0) === 0) : undefined
  if (isObject(choice)) {
    parts.push({
      _tag: "Delta",
      delta: isObject(choice.delta) ? choice.delta : {},
      finishReason: typeof choice.finish_reason === "string" ? choice.finish_reason : null,
      ...(choice.logprobs === undefined || choice.logprobs === null ? {} : { logprobs: choice.logprobs })
    })
  }
  const usage = usageOf(event.usage)
  if (usage !== undefined) parts.push({ _tag: "Usage", usage })
  return parts
}

/**
 * The parts of a stream's events, read from its body a pull at a time: each pull gives the parts of
 * every event the text buffered so far completes (as they came off the socket: per event work would
 * split the stream into one chunk per event for every stage after it, and the server would write each
 * event apart). Only the chunk holding the reply's first output ends with it
 * (ChatProvider.carriesOutput), so that the first token goes out before the rest is worked on. The
 * parts before an error event are delivered, then the stream fails; it ends at `[DONE]`, or at the
 * body's end after a finish reason, and fails when the body ends before one.
 */
const partsOf = (
  body: Effect.Effect<string | undefined, ChatProvider.ChatProviderError>
): Stream.Stream<ChatProvider.ChatStreamPart, ChatProvider.ChatProviderError> =>
  Stream.fromPull(
    Effect.sync(() => {
      const reader = new Sse.Reader()
      let pending: ReadonlyArray<string> = []
      let at = 0
      let outputSeen = false
      let finished = false
      /** Where the events end: at `[DONE]`, or at the body's end. */
      let end: "done" | "body" | undefined
      let failure: ChatProvider.ChatProviderError | undefined
      const next: Effect.Effect<
        Arr.NonEmptyReadonlyArray<ChatProvider.ChatStreamPart>,
        ChatProvider.ChatProviderError | Cause.Done<void>
      > = Effect.suspend(() => {
        const parts: Array<ChatProvider.ChatStreamPart> = []
        while (at < pending.length) {
          const data = pending[at++]!
          if (data.trim() === "[DONE]") {
            end = "done"
            at = pending.length
            break
          }
          const parsed = eventParts(data)
          if (parsed instanceof ChatProvider.ChatProviderError) {
            failure = parsed
            at = pending.length
            break
          }
          let firstOutput = false
          for (const part of parsed) {
            parts.push(part)
            if (part._tag !== "Delta") continue
            if (part.finishReason !== null) finished = true
            if (!outputSeen && ChatProvider.carriesOutput(part.delta)) outputSeen = firstOutput = true
          }
          if (firstOutput) break
        }
        if (Arr.isArrayNonEmpty(parts)) return Effect.succeed(parts)
        if (failure !== undefined) return Effect.fail(failure)
        if (end === "done" || (end === "body" && finished)) return Cause.done()
        if (end === "body") return Effect.fail(fail("Unavailable", "the upstream closed the stream before it finished"))
        return Effect.flatMap(body, (text) => {
          if (text === undefined) {
            end = "body"
            pending = reader.end()
          } else pending = reader.feed(text)
          at = 0
          return next
        })
      })
      return next
    })
  )

export const make = (options: Options): ChatProvider.ChatProviderV1 => build(options).provider

/** `make`, its pooled connections closed when the scope closes (a layer's, when built in one). */
export const scoped = (options: Options): Effect.Effect<ChatProvider.ChatProviderV1, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => build(options)),
      ({ pool }) => Effect.sync(() => UpstreamPost.close(pool))
    ),
    ({ provider }) => provider
  )

const build = (options: Options): { readonly provider: ChatProvider.ChatProviderV1; readonly pool: UpstreamPost.Pool } => {
  const url = new URL(`${options.baseUrl.replace(/\/+$/, "")}/chat/completions`)
  const apiKey =
    options.apiKey === undefined
      ? undefined
      : typeof options.apiKey === "string"
        ? options.apiKey
        : Redacted.value(options.apiKey)
  const capParameter = options.capParameter ?? "max_tokens"
  const requestTimeoutMs = options.requestTimeoutMs ?? 600_000
  const firstByteTimeoutMs = options.firstByteTimeoutMs ?? 60_000
  const idleTimeoutMs = options.idleTimeoutMs ?? 60_000
  const maxReplyBytes = options.maxReplyBytes ?? 16 * 1024 * 1024
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000
  const pool = UpstreamPost.pool(url, options.connections ?? 128)

  const body = (call: ChatProvider.ChatCall, stream: boolean): JsonObject => ({
    ...call.body,
    model: options.models?.[call.model] ?? call.model,
    [capParameter]: call.maxTokens,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {})
  })

  /**
   * POSTs and waits for the response to start; a non-2xx status fails classified, its body read in
   * what is left of `timeoutMs`.
   */
  const post = (payload: JsonObject, timeoutMs: number) =>
    Effect.suspend(() => posted(payload, timeoutMs, Date.now() + timeoutMs))

  const posted = (payload: JsonObject, timeoutMs: number, deadlineMs: number) =>
    UpstreamPost.post(
      pool,
      url,
      {
        "content-type": "application/json",
        accept: payload.stream === true ? "text/event-stream" : "application/json",
        ...(apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` }),
        ...options.headers
      },
      JSON.stringify(payload),
      { connectTimeoutMs, answerTimeoutMs: timeoutMs }
    ).pipe(
      Effect.mapError((cause) =>
        cause instanceof UpstreamPost.NoAnswer
          ? fail("Timeout", cause.message)
          : fail("Unavailable", `could not reach the upstream: ${String(cause)}`, { cause })
      ),
      Effect.flatMap((response) => {
        const status = response.statusCode ?? 0
        if (status >= 200 && status < 300) return Effect.succeed(response)
        return Effect.flatMap(
          // Unread (too large, broken or late), it is shown as no body.
          BodyPull.whole(response, 64 * 1024, Math.max(0, deadlineMs - Date.now()), constVoid, constVoid).pipe(
            Effect.orElseSucceed(() => "")
          ),
          (text) =>
            Effect.flatMap(Clock.currentTimeMillis, (now) => {
              const retryAfter = response.headers["retry-after"]
              return Effect.fail(classifyStatus(status, text, retryAfter ?? null, now))
            })
        )
      })
    )

  /** The reply read from a completion's body, or why it is not one. */
  const reply = (text: string): ChatProvider.ChatReply | ChatProvider.ChatProviderError => {
    let reply: unknown
    try {
      reply = JSON.parse(text)
    } catch (cause) {
      return fail("Unavailable", "the upstream's reply is not JSON", { cause })
    }
    const choice = isObject(reply) && Array.isArray(reply.choices) ? reply.choices[0] : undefined
    if (!isObject(reply) || !isObject(choice) || !isObject(choice.message)) {
      return fail("Unavailable", "the upstream's reply has no message")
    }
    return {
      message: choice.message,
      finishReason: typeof choice.finish_reason === "string" ? choice.finish_reason : null,
      ...(choice.logprobs === undefined ? {} : { logprobs: choice.logprobs as Json }),
      usage: usageOf(reply.usage)
    }
  }

  // The request time limit is kept by timers (the post's, then the body's for what is left of it), not
  // by a race of fibers.
  const complete = (call: ChatProvider.ChatCall) =>
    Effect.suspend(() => {
      const deadlineMs = Date.now() + requestTimeoutMs
      return Effect.flatMap(post(body(call, false), requestTimeoutMs), (response) =>
        Effect.flatMap(
          BodyPull.whole(
            response,
            maxReplyBytes,
            deadlineMs - Date.now(),
            () => fail("Timeout", `the upstream did not finish within ${requestTimeoutMs} ms`),
            (cause) => fail("Unavailable", `reading the upstream's reply failed: ${String(cause)}`, { cause })
          ),
          (text) => {
            const read = reply(text)
            return read instanceof ChatProvider.ChatProviderError ? Effect.fail(read) : Effect.succeed(read)
          }
        )
      )
    })

  const stream = Effect.fnUntraced(function* (call: ChatProvider.ChatCall) {
    // Ends the upstream request however the stream ends: a reply received whole (the rest of it in the
    // buffer) is drained, its socket back in the pool at its end later in this turn (not waited for, so
    // that the client's response ends in the same write as its last events); any other is destroyed
    // with its connection.
    // On the scope, not Effect.addFinalizer (docs/decisions.md, Development: finalizers on request paths).
    const started: { response?: IncomingMessage } = {}
    yield* Scope.addFinalizer(
      yield* Effect.scope,
      Effect.sync(() => {
        const response = started.response
        if (response === undefined) return
        if (response.complete) response.resume()
        else response.destroy()
      })
    )
    const response = (started.response = yield* post(body(call, true), firstByteTimeoutMs))
    return partsOf(
      BodyPull.make(
        response,
        idleTimeoutMs,
        () => fail("Timeout", `the upstream's stream was idle for ${idleTimeoutMs} ms`),
        (cause) => fail("Unavailable", `the upstream's stream broke: ${String(cause)}`, { cause })
      )
    )
  })

  return { provider: { specificationVersion: "v1", provider: options.provider, complete, stream }, pool }
}
