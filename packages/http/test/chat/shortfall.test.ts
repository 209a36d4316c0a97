/**
 * The shortfall over HTTP: an msw-mocked upstream reports far more completion tokens than the
 * request's max_tokens reserved. The customer is charged the reservation and no more; what the
 * usage cost beyond it is recorded with the request (ChatStore.margin) and counted in
 * `taskmeter_chat_shortfall_micros_total`, non-stream and stream alike. The upstream is the
 * default one as CHAT_UPSTREAM_* configure it, with its cost per token: that cost is recorded too.
 */
import { afterAll, afterEach, beforeAll, describe, expect, layer } from "@effect/vitest"
import { Effect, Metric } from "effect"
import { http, HttpResponse } from "msw"
import { setupServer } from "msw/node"
import { ChatStore, Metrics } from "@taskmeter/kernel"
import * as T from "./ChatTestServer.ts"

const upstream = setupServer()
beforeAll(() => upstream.listen({ onUnhandledFrame: "bypass" }))
afterEach(() => upstream.resetHandlers())
afterAll(() => upstream.close())

/** What the upstream reports, whatever max_tokens said: 1,000 completion tokens. */
const REPORTED = { prompt_tokens: 20, completion_tokens: 1_000, total_tokens: 1_020 }
/** chat-pro's first tier: 1.25 USD per million prompt tokens, 10 USD per million completion tokens. */
const REPORTED_COST = Math.ceil((20 * 1_250_000 + 1_000 * 10_000_000) / 1_000_000)
/** What the upstream costs us: 1 USD per million prompt tokens, 4 USD per million completion tokens. */
const UPSTREAM_COST = Math.ceil((20 * 1_000_000 + 1_000 * 4_000_000) / 1_000_000)

const upstreamEnv = {
  CHAT_UPSTREAM_BASE_URL: T.UPSTREAM,
  CHAT_UPSTREAM_API_KEY: "sk-upstream",
  CHAT_UPSTREAM_MODELS: "chat-pro=vendor-pro-2",
  CHAT_UPSTREAM_COST_PROMPT_MICROS_PER_MILLION: "1000000",
  CHAT_UPSTREAM_COST_COMPLETION_MICROS_PER_MILLION: "4000000"
}

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

const overReporting = () =>
  upstream.use(
    http.post(`${T.UPSTREAM}/chat/completions`, async ({ request }) => {
      const head = { id: "up", created: 1, model: "vendor-pro-2" }
      if (((await request.json()) as { stream?: boolean }).stream === true) {
        return sse([
          {
            ...head,
            object: "chat.completion.chunk",
            choices: [{ index: 0, delta: { role: "assistant", content: "Oslo." }, finish_reason: "stop" }]
          },
          { ...head, object: "chat.completion.chunk", choices: [], usage: REPORTED }
        ])
      }
      return HttpResponse.json({
        ...head,
        object: "chat.completion",
        choices: [{ index: 0, message: { role: "assistant", content: "Oslo." }, finish_reason: "stop" }],
        usage: REPORTED
      })
    })
  )

const shortfallCounted = Metric.value(Metric.withAttributes(Metrics.chatShortfall, { model: "chat-pro" }))

const ask = (who: T.Customer, stream: boolean) =>
  T.call("/api/v1/chat/completions", who, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "chat-pro",
      max_tokens: 10,
      stream,
      messages: [{ role: "user", content: "Capital of Norway?" }]
    })
  })

/** The request's id and charge, from a completion or the stream's chunk that carries svc. */
const answerOf = (body: unknown, stream: boolean): { readonly id: string; readonly charged: number } => {
  if (!stream) {
    const completion = body as { id: string; svc: { charged_micros: number } }
    return { id: completion.id, charged: completion.svc.charged_micros }
  }
  const chunks = (body as string)
    .split("\n\n")
    .filter((event) => event.startsWith("data: {"))
    .map((event) => JSON.parse(event.slice("data: ".length)))
  const last = chunks.find((chunk) => chunk.svc !== undefined)
  return { id: last.id, charged: last.svc.charged_micros }
}

layer(T.layer({ upstreamEnv }), { excludeTestServices: true })("shortfall", (it) => {
  describe("an upstream reporting more tokens than were reserved", () => {
    for (const stream of [false, true]) {
      it.effect(
        `${stream ? "streamed" : "non-stream"}: charged the reservation, the rest recorded and counted as shortfall; the upstream's cost recorded`,
        () =>
          Effect.gen(function* () {
            overReporting()
            const from = new Date()
            const counted = (yield* shortfallCounted).count
            const who = yield* T.customer(10_000_000)
            const reply = yield* ask(who, stream)
            expect(reply.status).toBe(200)
            const answer = answerOf(reply.body, stream)
            const body = yield* T.usage(who)
            const record = yield* T.request(who, answer.id)
            // max_tokens 10 reserved far less than 1,000 completion tokens cost.
            expect(record.reservedMicros).toBeLessThan(REPORTED_COST)
            expect(record.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 1_000 })
            expect(answer.charged).toBe(record.reservedMicros)
            expect(record.chargedMicros).toBe(record.reservedMicros)
            expect(body.balanceMicros).toBe(10_000_000 - record.reservedMicros)
            const shortfall = REPORTED_COST - record.reservedMicros
            const store = yield* ChatStore.ChatStore
            const rows = yield* store.margin({ from, to: new Date(Date.now() + 1000) })
            expect(rows).toEqual([
              {
                model: "chat-pro",
                upstream: "upstream",
                requests: 1,
                chargedMicros: record.reservedMicros,
                upstreamCostMicros: UPSTREAM_COST,
                shortfallMicros: shortfall
              }
            ])
            expect((yield* shortfallCounted).count - counted).toBe(shortfall)
          })
      )
    }
  })
})
