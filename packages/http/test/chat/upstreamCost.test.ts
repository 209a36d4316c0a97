/**
 * The upstream that served a chat request and its cost, recorded with it: a route over two
 * msw-mocked upstreams whose first refuses (503), so the second answers, at its own cost per
 * token; the margin report (ChatStore.margin) shows the request under the fallback upstream.
 */
import { afterAll, afterEach, beforeAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { http, HttpResponse } from "msw"
import { setupServer } from "msw/node"
import { ChatStore } from "@taskmeter/kernel"
import { ChatRoute, OpenAiCompatible } from "@taskmeter/providers"
import * as T from "./ChatTestServer.ts"

const PRIMARY = "https://primary.upstream.test/v1"
const BACKUP = "https://backup.upstream.test/v1"

const upstreams = setupServer()
beforeAll(() => upstreams.listen({ onUnhandledFrame: "bypass" }))
afterEach(() => upstreams.resetHandlers())
afterAll(() => upstreams.close())

const adapter = (provider: string, baseUrl: string) =>
  OpenAiCompatible.make({
    provider,
    baseUrl,
    apiKey: `sk-${provider}`,
    models: { "chat-pro": "vendor-pro-2" },
    ...T.upstreamTimeouts
  })

const route = ChatRoute.make("upstream", [
  { provider: adapter("primary", PRIMARY), models: undefined, costPromptMicrosPerMillion: 1_000_000 },
  {
    provider: adapter("backup", BACKUP),
    models: undefined,
    costPromptMicrosPerMillion: 2_000_000,
    costCompletionMicrosPerMillion: 8_000_000
  }
])

const encoder = new TextEncoder()
const sse = (events: ReadonlyArray<unknown>) =>
  new HttpResponse(
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const data of events) controller.enqueue(encoder.encode(`data: ${JSON.stringify(data)}\n\n`))
        controller.enqueue(encoder.encode("data: [DONE]\n\n"))
        controller.close()
      }
    }),
    { headers: { "content-type": "text/event-stream", "transfer-encoding": "chunked" } }
  )

const answered: Array<string> = []
const answer = () =>
  upstreams.use(
    http.post(`${PRIMARY}/chat/completions`, () => {
      answered.push("primary")
      return HttpResponse.json({ error: { message: "overloaded" } }, { status: 503 })
    }),
    http.post(`${BACKUP}/chat/completions`, async ({ request }) => {
      answered.push("backup")
      const head = { id: "up", object: "chat.completion.chunk", created: 1, model: "vendor-pro-2" }
      if (((await request.json()) as { stream?: boolean }).stream === true) {
        return sse([
          { ...head, choices: [{ index: 0, delta: { role: "assistant", content: "Oslo." }, finish_reason: "stop" }] },
          { ...head, choices: [], usage: { prompt_tokens: 2_000, completion_tokens: 100, total_tokens: 2_100 } }
        ])
      }
      return HttpResponse.json({
        id: "up",
        object: "chat.completion",
        created: 1,
        model: "vendor-pro-2",
        choices: [{ index: 0, message: { role: "assistant", content: "Oslo." }, finish_reason: "stop" }],
        usage: { prompt_tokens: 1_000, completion_tokens: 500, total_tokens: 1_500 }
      })
    })
  )

layer(T.layer({ upstream: route }), { excludeTestServices: true })("upstream cost", (it) => {
  describe("a request served by the fallback upstream", () => {
    it.effect("records that upstream and its cost; the margin report shows them beside the charge", () =>
      Effect.gen(function* () {
        answered.length = 0
        answer()
        const from = new Date()
        const who = yield* T.customer(10_000_000)
        const reply = yield* T.call("/api/v1/chat/completions", who, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "chat-pro", messages: [{ role: "user", content: "Capital of Norway?" }] })
        })
        expect(reply.status).toBe(200)
        expect(answered).toEqual(["primary", "backup"])
        const charged = reply.body.svc.charged_micros as number
        expect(charged).toBeGreaterThan(0)
        // The settlement is written in a batch: wait for it.
        yield* T.usage(who)
        const store = yield* ChatStore.ChatStore
        const rows = yield* store.margin({ from, to: new Date(Date.now() + 1000) })
        // 1,000 prompt tokens at 2 USD and 500 completion tokens at 8 USD per million.
        expect(rows).toEqual([
          {
            model: "chat-pro",
            upstream: "backup",
            requests: 1,
            chargedMicros: charged,
            upstreamCostMicros: 6_000,
            shortfallMicros: 0
          }
        ])
      })
    )

    it.effect("streamed, records the upstream that answered before the first token, at its cost", () =>
      Effect.gen(function* () {
        answered.length = 0
        answer()
        const from = new Date()
        const who = yield* T.customer(10_000_000)
        const reply = yield* T.call("/api/v1/chat/completions", who, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "chat-pro", stream: true, messages: [{ role: "user", content: "Capital of Norway?" }] })
        })
        expect(reply.status).toBe(200)
        expect(reply.body).toContain("Oslo.")
        expect(answered).toEqual(["primary", "backup"])
        const body = yield* T.usage(who)
        const store = yield* ChatStore.ChatStore
        const rows = yield* store.margin({ from, to: new Date(Date.now() + 1000) })
        // 2,000 prompt tokens at 2 USD and 100 completion tokens at 8 USD per million.
        expect(rows).toEqual([
          {
            model: "chat-pro",
            upstream: "backup",
            requests: 1,
            chargedMicros: body.entries.find((entry: { kind: string }) => entry.kind === "charge").amountMicros,
            upstreamCostMicros: 4_800,
            shortfallMicros: 0
          }
        ])
      })
    )
  })
})
