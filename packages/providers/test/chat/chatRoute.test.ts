import { afterAll, afterEach, beforeAll, describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Stream } from "effect"
import { TestClock } from "effect/testing"
import { http, HttpResponse } from "msw"
import { setupServer } from "msw/node"
import type { ChatProvider } from "@taskmeter/kernel"
import { ChatRoute, ChatUpstreams, OpenAiCompatible } from "../../src/index.ts"

const server = setupServer()
beforeAll(() => server.listen({ onUnhandledFrame: "error" }))
afterEach(() => server.resetHandlers())
afterAll(() => server.close())

const baseOf = (name: string) => `https://${name}.upstream.test/v1`
const call: ChatProvider.ChatCall = { model: "chat-pro", body: { messages: [{ role: "user", content: "Hi" }] }, maxTokens: 16 }

/** Upstreams answering each as `answers[name]` says, every request noted in `order` by upstream name. */
const upstreams = (answers: Record<string, () => Response>) => {
  const order: Array<string> = []
  for (const [name, answer] of Object.entries(answers)) {
    server.use(
      http.post(`${baseOf(name)}/chat/completions`, () => {
        order.push(name)
        return answer()
      })
    )
  }
  return order
}

const member = (name: string, models?: ReadonlyArray<string>): ChatRoute.Member => ({
  provider: OpenAiCompatible.make({ provider: name, baseUrl: baseOf(name) }),
  models: models === undefined ? undefined : new Set(models)
})

const completion = (content: string) => () =>
  HttpResponse.json({
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
    usage: { prompt_tokens: 5, completion_tokens: 1 }
  })
const status = (code: number) => () => HttpResponse.json({ error: { message: `status ${code}` } }, { status: code })
const refused = () => HttpResponse.error()

const encoder = new TextEncoder()
const event = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`
const chunk = (content: string, finish: string | null = null) =>
  event({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content }, finish_reason: finish }] })
/** An event stream sending `chunks`, then closing or breaking off. */
const sse =
  (chunks: ReadonlyArray<string>, end: "close" | "error" = "close") =>
  () => {
    const queue = [...chunks]
    return new HttpResponse(
      new ReadableStream<Uint8Array>({
        pull(controller) {
          const next = queue.shift()
          if (next !== undefined) return controller.enqueue(encoder.encode(next))
          if (end === "close") return controller.close()
          return new Promise<void>((resolve) => setTimeout(() => resolve(controller.error(new Error("connection reset"))), 20))
        }
      }),
      { headers: { "content-type": "text/event-stream", "transfer-encoding": "chunked" } }
    )
  }
const contentOf = (parts: ReadonlyArray<ChatProvider.ChatStreamPart>) =>
  parts.map((part) => (part._tag === "Delta" ? String(part.delta.content ?? "") : "")).join("")

describe("ChatRoute.complete", () => {
  it.effect("falls back in order on 429, 5xx and a refused connection; the first answer wins", () =>
    Effect.gen(function* () {
      const order = upstreams({ a: status(429), b: status(503), c: refused, d: completion("from d"), e: completion("from e") })
      const route = ChatRoute.make("upstream", [member("a"), member("b"), member("c"), member("d"), member("e")])
      const reply = yield* route.complete(call)
      expect(reply.message).toEqual({ role: "assistant", content: "from d" })
      expect(reply.servedBy?.upstream).toBe("d")
      expect(order).toEqual(["a", "b", "c", "d"])
    })
  )

  it.effect("a request the upstream refuses as invalid is not retried elsewhere", () =>
    Effect.gen(function* () {
      const order = upstreams({ a: status(400), b: completion("from b") })
      const error = yield* Effect.flip(ChatRoute.make("upstream", [member("a"), member("b")]).complete(call))
      expect(error.reason).toBe("InvalidRequest")
      expect(order).toEqual(["a"])
    })
  )

  it.effect("skips upstreams that do not serve the model; the last failure is the answer", () =>
    Effect.gen(function* () {
      const order = upstreams({ a: completion("from a"), b: status(500), c: status(502) })
      const route = ChatRoute.make("upstream", [member("a", ["chat-mini"]), member("b"), member("c", ["chat-pro"])])
      expect(route.serves?.("chat-pro")).toBe(true)
      expect(route.serves?.("other")).toBe(true)
      expect(ChatRoute.make("mini", [member("a", ["chat-mini"])]).serves?.("chat-pro")).toBe(false)
      const error = yield* Effect.flip(route.complete(call))
      expect(error).toMatchObject({ reason: "Unavailable", status: 502 })
      expect(order).toEqual(["b", "c"])
    })
  )
})

describe("ChatRoute limits", () => {
  it.effect("an upstream at its open requests is passed over until one ends", () =>
    Effect.gen(function* () {
      const order = upstreams({ a: sse([chunk("A", "stop")]), b: completion("from b") })
      const route = ChatRoute.make("upstream", [{ ...member("a"), maxConcurrent: 1 }, member("b")])
      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* route.stream(call)
          expect((yield* route.complete(call)).message).toEqual({ role: "assistant", content: "from b" })
        })
      )
      // The stream's scope closed: a has room again.
      yield* Effect.scoped(Effect.flatMap(route.stream(call), Stream.runDrain))
      expect(order).toEqual(["a", "b", "a"])
    })
  )

  it.effect("an upstream past its requests per minute is passed over until the minute ends; none left is 429", () =>
    Effect.gen(function* () {
      const order = upstreams({ a: completion("from a") })
      const route = ChatRoute.make("upstream", [{ ...member("a"), requestsPerMinute: 2 }])
      yield* route.complete(call)
      yield* TestClock.adjust("30 seconds")
      yield* route.complete(call)
      const error = yield* Effect.flip(route.complete(call))
      expect(error).toMatchObject({ reason: "RateLimited", retryAfterSeconds: 30 })
      yield* TestClock.adjust("30 seconds")
      yield* route.complete(call)
      expect(order).toEqual(["a", "a", "a"])
    })
  )
})

describe("ChatRoute.stream", () => {
  const collect = (route: ChatProvider.ChatProviderV1) => Effect.scoped(Effect.flatMap(route.stream(call), Stream.runCollect))

  it.effect("falls back when an upstream refuses the stream or breaks it before its first part", () =>
    Effect.gen(function* () {
      const order = upstreams({
        a: status(500),
        b: sse([], "error"),
        c: sse([chunk("O"), chunk("slo", "stop")])
      })
      const parts = yield* collect(ChatRoute.make("upstream", [member("a"), member("b"), member("c")]))
      expect(contentOf(parts)).toBe("Oslo")
      expect(order).toEqual(["a", "b", "c"])
    })
  )

  it.effect("never falls back once a part was streamed: the break is the stream's error", () =>
    Effect.gen(function* () {
      const order = upstreams({ a: sse([chunk("Os")], "error"), b: sse([chunk("Oslo", "stop")]) })
      const route = ChatRoute.make("upstream", [member("a"), member("b")])
      const delivered: Array<ChatProvider.ChatStreamPart> = []
      const error = yield* Effect.flip(
        Effect.scoped(
          Effect.flatMap(route.stream(call), (parts) =>
            Stream.runForEach(parts, (part) => Effect.sync(() => delivered.push(part)))
          )
        )
      )
      expect(error.reason).toBe("Unavailable")
      expect(contentOf(delivered)).toBe("Os")
      expect(order).toEqual(["a"])
    })
  )
})

describe("ChatUpstreams.scoped", () => {
  const configured = (env: Record<string, string>) =>
    Effect.scoped(ChatUpstreams.scoped).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))

  it.effect("routes the price list's provider over the named upstreams in CHAT_ROUTES order", () =>
    Effect.gen(function* () {
      const order = upstreams({ upstream: status(503), backup: completion("from backup") })
      const providers = yield* Effect.scoped(
        Effect.gen(function* () {
          const providers = yield* ChatUpstreams.scoped
          const route = providers.find((provider) => provider.provider === "upstream")!
          return { names: providers.map((provider) => provider.provider), reply: yield* route.complete(call) }
        })
      ).pipe(
        Effect.provide(
          ConfigProvider.layer(
            ConfigProvider.fromEnv({
              env: {
                CHAT_UPSTREAM_BASE_URL: baseOf("upstream"),
                CHAT_UPSTREAMS: JSON.stringify([{ name: "backup", baseUrl: baseOf("backup"), models: { "chat-pro": "pro-2" } }]),
                CHAT_ROUTES: "upstream=upstream>backup",
                CHAT_LOCAL_ENABLED: "false"
              }
            })
          )
        )
      )
      expect(providers.names).toEqual(["upstream", "backup"])
      expect(providers.reply.message).toEqual({ role: "assistant", content: "from backup" })
      expect(order).toEqual(["upstream", "backup"])
    })
  )

  it.effect("the default upstream's CHAT_UPSTREAM_COST_* settings come with what it serves; without them no cost", () =>
    Effect.gen(function* () {
      upstreams({ upstream: completion("from upstream") })
      const servedBy = (env: Record<string, string>) =>
        Effect.scoped(
          Effect.gen(function* () {
            const providers = yield* ChatUpstreams.scoped
            const reply = yield* providers.find((provider) => provider.provider === "upstream")!.complete(call)
            return reply.servedBy
          })
        ).pipe(
          Effect.provide(
            ConfigProvider.layer(
              ConfigProvider.fromEnv({
                env: { CHAT_UPSTREAM_BASE_URL: baseOf("upstream"), CHAT_LOCAL_ENABLED: "false", ...env }
              })
            )
          )
        )
      expect(
        yield* servedBy({
          CHAT_UPSTREAM_COST_PROMPT_MICROS_PER_MILLION: "2500000",
          CHAT_UPSTREAM_COST_COMPLETION_MICROS_PER_MILLION: "10000000"
        })
      ).toEqual({ upstream: "upstream", costPromptMicrosPerMillion: 2_500_000, costCompletionMicrosPerMillion: 10_000_000 })
      expect(yield* servedBy({})).toEqual({
        upstream: "upstream",
        costPromptMicrosPerMillion: undefined,
        costCompletionMicrosPerMillion: undefined
      })
      const negative = yield* Effect.flip(configured({ CHAT_UPSTREAM_COST_PROMPT_MICROS_PER_MILLION: "-1" }))
      expect(negative.message).toContain("CHAT_UPSTREAM_COST_PROMPT_MICROS_PER_MILLION")
    })
  )

  it.effect("refuses a route naming an unknown upstream, and a name used twice", () =>
    Effect.gen(function* () {
      const unknown = yield* Effect.flip(configured({ CHAT_ROUTES: "upstream=nowhere", CHAT_LOCAL_ENABLED: "false" }))
      expect(unknown.message).toContain("unknown upstream nowhere")
      const twice = yield* Effect.flip(
        configured({
          CHAT_UPSTREAMS: JSON.stringify([
            { name: "b", baseUrl: baseOf("b") },
            { name: "b", baseUrl: baseOf("c") }
          ])
        })
      )
      expect(twice.message).toContain("used twice")
    })
  )
})
