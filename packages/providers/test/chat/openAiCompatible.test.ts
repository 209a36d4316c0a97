import { afterAll, afterEach, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { http, HttpResponse } from "msw"
import { setupServer } from "msw/node"
import type { ChatProvider } from "@taskmeter/kernel"
import { OpenAiCompatible } from "../../src/index.ts"

const BASE = "https://chat.upstream.test/v1"
const server = setupServer()
beforeAll(() => server.listen({ onUnhandledFrame: "error" }))
afterEach(() => server.resetHandlers())
afterAll(() => server.close())

const adapter = (options: Partial<OpenAiCompatible.Options> = {}) =>
  OpenAiCompatible.make({
    provider: "upstream",
    baseUrl: BASE,
    apiKey: "sk-test",
    models: { "chat-pro": "vendor-pro-2" },
    ...options
  })

const call: ChatProvider.ChatCall = {
  model: "chat-pro",
  body: { messages: [{ role: "user", content: "Capital of Norway?" }], temperature: 0 },
  maxTokens: 64
}

interface Seen {
  readonly headers: Headers
  readonly body: Record<string, unknown>
}

/** Answers POST /chat/completions with `respond`, recording each request. */
const upstream = (respond: (seen: Seen) => Response | Promise<Response>) => {
  const seen: Array<Seen> = []
  server.use(
    http.post(`${BASE}/chat/completions`, async ({ request }) => {
      const one = { headers: request.headers, body: (await request.json()) as Record<string, unknown> }
      seen.push(one)
      return respond(one)
    })
  )
  return seen
}

const encoder = new TextEncoder()

/**
 * An SSE body sending `chunks` as they are (so a test controls the byte boundaries), then
 * ending as `end` says: closed, broken or never. It is framed
 * chunked, as real servers send event streams: under msw's socket mock a close-delimited body
 * that the client cancels trips an assertion inside undici.
 */
const sse = (chunks: ReadonlyArray<string>, end: "close" | "error" | "hang" = "close", onCancel?: () => void) => {
  const queue = [...chunks]
  return new HttpResponse(
    new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = queue.shift()
        if (next !== undefined) return controller.enqueue(encoder.encode(next))
        if (end === "close") return controller.close()
        // Broken a moment later, as a network would: an errored body loses what the client has not read.
        if (end === "error") {
          return new Promise<void>((resolve) =>
            setTimeout(() => resolve(controller.error(new Error("connection reset by peer"))), 1000)
          )
        }
        return new Promise<void>(() => {})
      },
      cancel() {
        onCancel?.()
      }
    }),
    { headers: { "content-type": "text/event-stream", "transfer-encoding": "chunked" } }
  )
}

const event = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`
const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  event({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })

const collect = (provider: ChatProvider.ChatProviderV1) => Effect.scoped(Effect.flatMap(provider.stream(call), Stream.runCollect))

describe("OpenAiCompatible.complete", () => {
  it.effect("sends the request with the upstream's model id and the cap, and reads the reply", () =>
    Effect.gen(function* () {
      const seen = upstream(() =>
        HttpResponse.json({
          id: "x",
          object: "chat.completion",
          choices: [{ index: 0, message: { role: "assistant", content: "Oslo." }, finish_reason: "stop", logprobs: null }],
          usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 }
        })
      )
      const reply = yield* adapter().complete(call)
      expect(reply).toEqual({
        message: { role: "assistant", content: "Oslo." },
        finishReason: "stop",
        logprobs: null,
        usage: { promptTokens: 12, completionTokens: 3 }
      })
      expect(seen[0]?.body).toEqual({
        messages: [{ role: "user", content: "Capital of Norway?" }],
        temperature: 0,
        model: "vendor-pro-2",
        max_tokens: 64
      })
      expect(seen[0]?.headers.get("authorization")).toBe("Bearer sk-test")
    })
  )

  it.effect("sends max_completion_tokens to upstreams that want it; reports no usage when it is missing", () =>
    Effect.gen(function* () {
      const seen = upstream(() =>
        HttpResponse.json({ choices: [{ message: { role: "assistant", content: "ok" }, finish_reason: "stop" }] })
      )
      const reply = yield* adapter({ capParameter: "max_completion_tokens" }).complete({ ...call, model: "other" })
      expect(reply.usage).toBeUndefined()
      expect(seen[0]?.body).toMatchObject({ model: "other", max_completion_tokens: 64 })
      expect(seen[0]?.body).not.toHaveProperty("max_tokens")
    })
  )

  it.effect("classifies statuses", () =>
    Effect.gen(function* () {
      const answers = [
        new HttpResponse(JSON.stringify({ error: { message: "Rate limit reached" } }), {
          status: 429,
          headers: { "retry-after": "12" }
        }),
        HttpResponse.json({ error: { message: "internal" } }, { status: 500 }),
        HttpResponse.json({ error: { message: "tools[0].function.name is required" } }, { status: 400 }),
        HttpResponse.json({ error: { message: "invalid api key" } }, { status: 401 }),
        new HttpResponse("not json at all", { status: 200 })
      ]
      let next = 0
      upstream(() => answers[next++]!)
      const errors = []
      for (let i = 0; i < answers.length; i++) errors.push(yield* Effect.flip(adapter().complete(call)))
      expect(errors.map((e) => [e.reason, e.status, e.retryAfterSeconds])).toEqual([
        ["RateLimited", 429, 12],
        ["Unavailable", 500, undefined],
        ["InvalidRequest", 400, undefined],
        ["Unavailable", 401, undefined],
        ["Unavailable", undefined, undefined]
      ])
      expect(errors[2]?.message).toBe("tools[0].function.name is required")
    })
  )

  it.live("times out an upstream that does not answer", () =>
    Effect.gen(function* () {
      upstream(() => new Promise<Response>(() => {}))
      const error = yield* Effect.flip(adapter({ requestTimeoutMs: 100 }).complete(call))
      expect(error.reason).toBe("Timeout")
    })
  )

  it.live("times out a reply whose body does not end in time, giving its body up", () =>
    Effect.gen(function* () {
      let cancelled = false
      upstream(() => sse(['{"choices":'], "hang", () => (cancelled = true)))
      const error = yield* Effect.flip(adapter({ requestTimeoutMs: 200 }).complete(call))
      expect([error.reason, error.message]).toEqual(["Timeout", "the upstream did not finish within 200 ms"])
      yield* Effect.sleep(50)
      expect(cancelled).toBe(true)
    })
  )

  it.live("reads the body of an error status in what is left of the request's time, not more", () =>
    Effect.gen(function* () {
      // The head of a 500 comes late, then its body never ends.
      upstream(
        () =>
          new Promise<Response>((resolve) =>
            setTimeout(() => {
              const hanging = sse(['{"error":'], "hang")
              resolve(new HttpResponse(hanging.body, { status: 500, headers: hanging.headers }))
            }, 700)
          )
      )
      const started = Date.now()
      const error = yield* Effect.flip(adapter({ requestTimeoutMs: 1_000 }).complete(call))
      expect([error.reason, error.status]).toEqual(["Unavailable", 500])
      // A fresh 1,000 ms for the body would end it at 1,700 ms or later.
      expect(Date.now() - started).toBeLessThan(1_500)
    })
  )

  it.effect("a reply larger than maxReplyBytes is Unavailable", () =>
    Effect.gen(function* () {
      upstream(() => HttpResponse.json({ choices: [{ message: { role: "assistant", content: "x".repeat(200) } }] }))
      const error = yield* Effect.flip(adapter({ maxReplyBytes: 100 }).complete(call))
      expect([error.reason, error.message]).toEqual([
        "Unavailable",
        "reading the upstream's reply failed: RangeError: the body is larger than 100 bytes"
      ])
    })
  )

  it.effect("a network failure is Unavailable", () =>
    Effect.gen(function* () {
      upstream(() => HttpResponse.error())
      expect((yield* Effect.flip(adapter().complete(call))).reason).toBe("Unavailable")
    })
  )
})

describe("OpenAiCompatible.stream", () => {
  it.effect("asks for usage and parses deltas, finish reason and usage, across any chunking", () =>
    Effect.gen(function* () {
      const body = [
        ": keep-alive\n\n",
        chunk({ role: "assistant", content: "" }),
        chunk({ content: "Os" }),
        chunk({ content: "lo." }),
        chunk({}, "stop"),
        event({ id: "c1", choices: [], usage: { prompt_tokens: 12, completion_tokens: 2 } }),
        "data: [DONE]\n\n"
      ]
        .join("")
        .replaceAll("\n", "\r\n")
      // Cut the bytes at awkward places: inside "data:", inside JSON, between \r and \n.
      const pieces = [body.slice(0, 7), body.slice(7, 60), body.slice(60, 61), body.slice(61, 200), body.slice(200)]
      const seen = upstream(() => sse(pieces))
      const parts = yield* collect(adapter())
      expect(parts).toEqual([
        { _tag: "Delta", delta: { role: "assistant", content: "" }, finishReason: null },
        { _tag: "Delta", delta: { content: "Os" }, finishReason: null },
        { _tag: "Delta", delta: { content: "lo." }, finishReason: null },
        { _tag: "Delta", delta: {}, finishReason: "stop" },
        { _tag: "Usage", usage: { promptTokens: 12, completionTokens: 2 } }
      ])
      expect(seen[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true }, max_tokens: 64 })
      expect(seen[0]?.headers.get("accept")).toBe("text/event-stream")
    })
  )

  it.effect("a refused stream fails before any part", () =>
    Effect.gen(function* () {
      upstream(() => new HttpResponse("{}", { status: 429, headers: { "retry-after": "3" } }))
      const error = yield* Effect.flip(Effect.scoped(adapter().stream(call)))
      expect([error.reason, error.retryAfterSeconds]).toEqual(["RateLimited", 3])
    })
  )

  it.effect("a stream cut mid-way fails after the parts it delivered", () =>
    Effect.gen(function* () {
      upstream(() => sse([chunk({ content: "Os" })], "error"))
      const parts: Array<ChatProvider.ChatStreamPart> = []
      const error = yield* Effect.flip(
        Effect.scoped(
          Effect.flatMap(adapter().stream(call), (stream) =>
            Stream.runForEach(stream, (part) => Effect.sync(() => parts.push(part)))
          )
        )
      )
      expect(parts).toEqual([{ _tag: "Delta", delta: { content: "Os" }, finishReason: null }])
      expect(error.reason).toBe("Unavailable")
    })
  )

  it.effect("the events of a network chunk come as one chunk of parts, but the first output ends its chunk", () =>
    Effect.gen(function* () {
      upstream(() =>
        sse([
          chunk({ role: "assistant", content: "" }) +
            chunk({ content: "Os" }) +
            chunk({ content: "lo" }) +
            chunk({}, "stop") +
            event({ id: "c1", choices: [], usage: { prompt_tokens: 3, completion_tokens: 2 } })
        ])
      )
      const chunks = yield* Effect.scoped(
        Effect.flatMap(adapter().stream(call), (parts) => Stream.runCollect(Stream.chunks(parts)))
      )
      const contents = chunks.map((parts) =>
        parts.map((part) => (part._tag === "Delta" ? (part.delta.content ?? part.finishReason) : part._tag))
      )
      expect(contents).toEqual([
        ["", "Os"],
        ["lo", "stop", "Usage"]
      ])
    })
  )

  it.effect("an error event fails the stream at once after the parts before it, though they came in one chunk", () =>
    Effect.gen(function* () {
      let canceled = false
      upstream(() =>
        sse([chunk({ content: "Os" }) + event({ error: { message: "overloaded" } }) + chunk({ content: "lo" })], "hang", () => {
          canceled = true
        })
      )
      const parts: Array<ChatProvider.ChatStreamPart> = []
      const error = yield* Effect.flip(
        Effect.scoped(
          Effect.flatMap(adapter().stream(call), (stream) =>
            Stream.runForEach(stream, (part) => Effect.sync(() => parts.push(part)))
          )
        )
      )
      expect(parts).toEqual([{ _tag: "Delta", delta: { content: "Os" }, finishReason: null }])
      expect([error.reason, error.message]).toEqual(["Unavailable", "the upstream broke off the stream: overloaded"])
      expect(canceled).toBe(true)
    })
  )

  it.effect("a stream closed before its finish reason fails; one closed after it without [DONE] is complete", () =>
    Effect.gen(function* () {
      upstream(() => sse([chunk({ content: "Os" })]))
      expect((yield* Effect.flip(collect(adapter()))).message).toContain("before it finished")
      server.resetHandlers()
      upstream(() => sse([chunk({ content: "Oslo." }, "stop")]))
      expect(yield* collect(adapter())).toHaveLength(1)
    })
  )

  it.effect("an error event inside the stream fails it", () =>
    Effect.gen(function* () {
      upstream(() => sse([chunk({ content: "Os" }), event({ error: { message: "overloaded" } })]))
      const error = yield* Effect.flip(collect(adapter()))
      expect(error.reason).toBe("Unavailable")
      expect(error.message).toContain("overloaded")
    })
  )

  it.live("an idle stream times out, and closing the scope cancels the upstream body", () =>
    Effect.gen(function* () {
      let cancelled = false
      upstream(() => sse([chunk({ content: "Os" })], "hang", () => (cancelled = true)))
      const error = yield* Effect.flip(collect(adapter({ idleTimeoutMs: 100 })))
      expect(error.reason).toBe("Timeout")
      expect(cancelled).toBe(true)
    })
  )
})
