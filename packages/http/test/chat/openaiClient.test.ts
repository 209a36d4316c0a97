/**
 * The chat endpoints through the official `openai` client against the running server, and the
 * charges they report checked against the ledger (GET /api/v1/usage). The offline model serves
 * `taskmeter-local`; an msw-mocked OpenAI-compatible upstream serves `chat-pro`.
 */
import { afterAll, afterEach, beforeAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { http, HttpResponse } from "msw"
import { setupServer } from "msw/node"
import { ChatPrices, ChatTokens } from "@taskmeter/kernel"
import defaultChatPrices from "@taskmeter/kernel/prices/default-chat-prices.json" with { type: "json" }
import { APIError } from "openai"
import * as T from "./ChatTestServer.ts"

const upstream = setupServer()
// Requests to the server under test pass through; only the upstream is mocked.
beforeAll(() => upstream.listen({ onUnhandledFrame: "bypass" }))
afterEach(() => upstream.resetHandlers())
afterAll(() => upstream.close())

const tiersOf = (model: keyof typeof defaultChatPrices.models) =>
  defaultChatPrices.models[model].tiers as unknown as ReadonlyArray<ChatPrices.ChatPriceTier>

const QUESTION = [{ role: "user" as const, content: "What is the capital of Norway?" }]

const encoder = new TextEncoder()
const event = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`
const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  event({
    id: "up",
    object: "chat.completion.chunk",
    created: 1,
    model: "vendor-pro-2",
    choices: [{ index: 0, delta, finish_reason: finish }]
  })

/**
 * An upstream SSE body: each piece after `gapMs`, then closed, broken or left hanging. Framed
 * chunked like a real server's (a close-delimited mock body trips undici under msw).
 */
const sse = (
  pieces: ReadonlyArray<string>,
  options: { readonly gapMs?: number; readonly end?: "close" | "error"; readonly onCancel?: () => void } = {}
) => {
  const queue = [...pieces]
  return new HttpResponse(
    new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((resolve) => setTimeout(resolve, options.gapMs ?? 0))
        const next = queue.shift()
        if (next !== undefined) return controller.enqueue(encoder.encode(next))
        if (options.end === "error") return controller.error(new Error("connection reset by peer"))
        controller.close()
      },
      cancel() {
        options.onCancel?.()
      }
    }),
    { headers: { "content-type": "text/event-stream", "transfer-encoding": "chunked" } }
  )
}

/** Answers the upstream's POST /chat/completions, recording the bodies it was sent. */
const answerUpstream = (respond: (body: Record<string, any>) => Response | Promise<Response>) => {
  const bodies: Array<Record<string, any>> = []
  upstream.use(
    http.post(`${T.UPSTREAM}/chat/completions`, async ({ request }) => {
      const body = (await request.json()) as Record<string, any>
      bodies.push(body)
      return respond(body)
    })
  )
  return bodies
}

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)
const failure = (f: () => Promise<unknown>) =>
  Effect.promise(() =>
    f().then(
      () => undefined,
      (error: unknown) => error as APIError
    )
  )

layer(T.layer(), { excludeTestServices: true })("chat through the openai client", (it) => {
  describe("GET /api/v1/chat/models", () => {
    it.effect("lists the callable models with their tiers, without credentials", () =>
      Effect.gen(function* () {
        const reply = yield* T.call("/api/v1/chat/models")
        expect(reply.status).toBe(200)
        expect(reply.body.object).toBe("list")
        expect(reply.body.data.map((model: { id: string }) => model.id)).toEqual(["taskmeter-local", "chat-pro", "chat-mini"])
        expect(reply.body.data[1].pricing.tiers).toEqual([
          {
            up_to_prompt_tokens: 200000,
            prompt_usd_per_million: "1.250000",
            completion_usd_per_million: "10.000000",
            prompt_micros_per_million: 1250000,
            completion_micros_per_million: 10000000
          },
          {
            up_to_prompt_tokens: null,
            prompt_usd_per_million: "2.500000",
            completion_usd_per_million: "15.000000",
            prompt_micros_per_million: 2500000,
            completion_micros_per_million: 15000000
          }
        ])
      })
    )
  })

  describe("the offline model", () => {
    it.effect("a plain completion reports usage and a charge that the ledger shows", () =>
      Effect.gen(function* () {
        const who = yield* T.customer(1_000_000)
        const completion = yield* promise(() =>
          who.openai.chat.completions.create({ model: "taskmeter-local", messages: QUESTION, max_tokens: 50 })
        )
        expect(completion.object).toBe("chat.completion")
        expect(completion.choices[0]?.message.content).toBe("You said: What is the capital of Norway?")
        expect(completion.choices[0]?.finish_reason).toBe("stop")
        const usage = completion.usage!
        const charged = (completion as unknown as { svc: { charged_micros: number } }).svc.charged_micros
        expect(charged).toBe(
          ChatPrices.cost(tiersOf("taskmeter-local"), {
            promptTokens: usage.prompt_tokens,
            completionTokens: usage.completion_tokens
          })
        )
        const reserved = ChatPrices.cost(tiersOf("taskmeter-local"), {
          promptTokens: ChatTokens.estimatePrompt("o200k_base", QUESTION),
          completionTokens: 50
        })
        // The request's credit came from the server's lease: its one entry is the charge.
        expect(yield* T.movements(who, completion.id)).toEqual([["charge", charged]])
        const balances = yield* T.usage(who)
        expect([balances.balanceMicros, balances.reservedMicros]).toEqual([1_000_000 - charged, 0])

        const record = yield* T.request(who, completion.id)
        expect(record).toEqual({
          id: completion.id,
          model: "taskmeter-local",
          status: "succeeded",
          reservedMicros: reserved,
          chargedMicros: charged,
          currency: "USD",
          usage: {
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: usage.total_tokens,
            prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
            completion_tokens_details: {
              reasoning_tokens: 0,
              audio_tokens: 0,
              accepted_prediction_tokens: 0,
              rejected_prediction_tokens: 0
            }
          },
          finishReason: "stop",
          errorCode: null,
          createdAt: expect.any(String),
          completedAt: expect.any(String)
        })
      })
    )

    it.effect("a streamed completion sends chunks, the charge with finish_reason, then [DONE]", () =>
      Effect.gen(function* () {
        const who = yield* T.customer(1_000_000)
        const stream = yield* promise(() =>
          who.openai.chat.completions.create({ model: "taskmeter-local", messages: QUESTION, stream: true })
        )
        const chunks = yield* promise(async () => {
          const all = []
          // Naive code that reads choices[0] of every chunk works: without include_usage no chunk has empty choices.
          for await (const chunk of stream) all.push({ ...chunk, content: chunk.choices[0]!.delta.content ?? "" })
          return all
        })
        expect(chunks.length).toBeGreaterThan(5)
        expect(chunks.map((c) => c.content).join("")).toBe("You said: What is the capital of Norway?")
        expect(chunks.every((c) => c.system_fingerprint === "fp_taskmeter")).toBe(true)
        const last = chunks.at(-1)! as (typeof chunks)[number] & { svc: { charged_micros: number } }
        expect(last.choices[0]?.finish_reason).toBe("stop")
        expect(last.usage).toBeUndefined()
        expect(yield* T.movements(who, last.id)).toContainEqual(["charge", last.svc.charged_micros])
        expect((yield* T.usage(who)).balanceMicros).toBe(1_000_000 - last.svc.charged_micros)
        expect((yield* T.request(who, last.id)).chargedMicros).toBe(last.svc.charged_micros)
      })
    )

    it.effect("with stream_options.include_usage a last chunk with empty choices carries usage and the charge", () =>
      Effect.gen(function* () {
        const who = yield* T.customer(1_000_000)
        const stream = yield* promise(() =>
          who.openai.chat.completions.create({
            model: "taskmeter-local",
            messages: QUESTION,
            stream: true,
            stream_options: { include_usage: true }
          })
        )
        const chunks = yield* promise(async () => {
          const all = []
          for await (const chunk of stream) all.push(chunk)
          return all
        })
        const [finish, last] = chunks.slice(-2) as Array<(typeof chunks)[number] & { svc: { charged_micros: number } }>
        expect(finish!.choices[0]?.finish_reason).toBe("stop")
        expect(last!.choices).toEqual([])
        expect(last!.usage?.completion_tokens).toBe(chunks.length - 3)
        expect(last!.usage?.completion_tokens_details?.reasoning_tokens).toBe(0)
        expect(last!.svc.charged_micros).toBe(finish!.svc.charged_micros)
      })
    )

    it.effect("a tool call round trip: the call, the result, the answer, each billed", () =>
      Effect.gen(function* () {
        const who = yield* T.customer(1_000_000)
        const tools = [
          {
            type: "function" as const,
            function: {
              name: "get_capital",
              description: "The capital of a country",
              parameters: { type: "object", properties: { country: { type: "string" } }, required: ["country"] }
            }
          }
        ]
        const messages: Array<any> = [{ role: "user", content: "Norway" }]
        const first = yield* promise(() => who.openai.chat.completions.create({ model: "taskmeter-local", messages, tools }))
        expect(first.choices[0]?.finish_reason).toBe("tool_calls")
        const toolCall = first.choices[0]!.message.tool_calls![0]!
        expect(toolCall.type === "function" && toolCall.function.name).toBe("get_capital")
        expect(toolCall.type === "function" && JSON.parse(toolCall.function.arguments)).toEqual({ country: "Norway" })
        messages.push(first.choices[0]!.message, { role: "tool", tool_call_id: toolCall.id, content: "Oslo" })
        const second = yield* promise(() => who.openai.chat.completions.create({ model: "taskmeter-local", messages, tools }))
        expect(second.choices[0]?.message.content).toBe("The tool returned: Oslo")

        const list = yield* T.call("/api/v1/chat/requests", who)
        expect(list.body.requests.map((r: { id: string }) => r.id)).toEqual([second.id, first.id])
        const charged = [first, second].map((c) => (c as unknown as { svc: { charged_micros: number } }).svc.charged_micros)
        expect((yield* T.usage(who)).balanceMicros).toBe(1_000_000 - charged[0]! - charged[1]!)
      })
    )
  })

  describe("an OpenAI-compatible upstream", () => {
    it.effect("forwards the request with the upstream's model id and the cap, and bills its usage", () =>
      Effect.gen(function* () {
        const bodies = answerUpstream(() =>
          HttpResponse.json({
            id: "up-1",
            object: "chat.completion",
            created: 1,
            model: "vendor-pro-2",
            choices: [{ index: 0, message: { role: "assistant", content: "Oslo." }, finish_reason: "stop" }],
            usage: { prompt_tokens: 15, completion_tokens: 2, total_tokens: 17 }
          })
        )
        const who = yield* T.customer(1_000_000)
        const completion = yield* promise(() =>
          who.openai.chat.completions.create({ model: "chat-pro", messages: QUESTION, max_tokens: 30, temperature: 0.1 })
        )
        expect(bodies).toEqual([{ model: "vendor-pro-2", messages: QUESTION, max_tokens: 30, temperature: 0.1 }])
        expect(completion.model).toBe("chat-pro")
        expect(completion.usage?.prompt_tokens).toBe(15)
        const charge = ChatPrices.cost(tiersOf("chat-pro"), { promptTokens: 15, completionTokens: 2 })
        expect((completion as unknown as { svc: { charged_micros: number } }).svc.charged_micros).toBe(charge)
        expect(yield* T.movements(who, completion.id)).toContainEqual(["charge", charge])
      })
    )

    it.effect("an upstream 500 is 502 UPSTREAM_ERROR and charges nothing", () =>
      Effect.gen(function* () {
        answerUpstream(() => HttpResponse.json({ error: { message: "boom" } }, { status: 500 }))
        const who = yield* T.customer(1_000_000)
        const error = yield* failure(() => who.openai.chat.completions.create({ model: "chat-pro", messages: QUESTION }))
        expect(error).toBeInstanceOf(APIError)
        expect(error?.status).toBe(502)
        const [record] = (yield* T.call("/api/v1/chat/requests", who)).body.requests
        expect(record).toMatchObject({ status: "failed", chargedMicros: 0, errorCode: "UPSTREAM_ERROR" })
        expect(yield* T.movements(who, record.id)).toEqual([])
        expect((yield* T.usage(who)).balanceMicros).toBe(1_000_000)
      })
    )

    it.effect("an upstream 429 is 429 UPSTREAM_RATE_LIMITED with its Retry-After, and charges nothing", () =>
      Effect.gen(function* () {
        answerUpstream(() => new HttpResponse("{}", { status: 429, headers: { "retry-after": "9" } }))
        const who = yield* T.customer(1_000_000)
        const reply = yield* T.call("/api/v1/chat/completions", who, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "chat-pro", messages: QUESTION })
        })
        expect(reply.status).toBe(429)
        expect(reply.body.code).toBe("UPSTREAM_RATE_LIMITED")
        expect(reply.headers.get("retry-after")).toBe("9")
        const usage = yield* T.usage(who)
        expect([usage.balanceMicros, usage.reservedMicros]).toEqual([1_000_000, 0])
      })
    )

    it.effect("an upstream that does not answer times out: 502, nothing charged", () =>
      Effect.gen(function* () {
        answerUpstream(() => new Promise<Response>(() => {}))
        const who = yield* T.customer(1_000_000)
        const error = yield* failure(() => who.openai.chat.completions.create({ model: "chat-pro", messages: QUESTION }))
        expect(error?.status).toBe(502)
        const usage = yield* T.usage(who)
        expect([usage.balanceMicros, usage.reservedMicros]).toEqual([1_000_000, 0])
      })
    )

    it.effect("a stream the upstream cuts mid-way is charged for what was delivered and recorded partial", () =>
      Effect.gen(function* () {
        answerUpstream(() =>
          sse([chunk({ role: "assistant", content: "" }), chunk({ content: "The capital" }), chunk({ content: " is" })], {
            gapMs: 5,
            end: "error"
          })
        )
        const who = yield* T.customer(1_000_000)
        const seen: Array<string> = []
        const error = yield* failure(async () => {
          const stream = await who.openai.chat.completions.create({ model: "chat-pro", messages: QUESTION, stream: true })
          for await (const c of stream) seen.push(c.choices[0]?.delta.content ?? "")
        })
        expect(seen.join("")).toBe("The capital is")
        expect(error).toBeInstanceOf(APIError)
        const [record] = (yield* T.call("/api/v1/chat/requests", who)).body.requests
        const delivered = ChatTokens.countText("o200k_base", "The capital is")
        const charge = ChatPrices.cost(tiersOf("chat-pro"), {
          promptTokens: ChatTokens.estimatePrompt("o200k_base", QUESTION),
          completionTokens: delivered
        })
        expect(record).toMatchObject({ status: "partial", chargedMicros: charge, errorCode: "UPSTREAM_ERROR" })
        expect(yield* T.movements(who, record.id)).toEqual([["charge", charge]])
        expect((yield* T.usage(who)).reservedMicros).toBe(0)
      })
    )

    it.effect("usage missing from the upstream stream is counted", () =>
      Effect.gen(function* () {
        const bodies = answerUpstream(() =>
          sse([
            chunk({ role: "assistant", content: "" }),
            chunk({ content: "Oslo is the capital." }),
            chunk({}, "stop"),
            "data: [DONE]\n\n"
          ])
        )
        const who = yield* T.customer(1_000_000)
        const stream = yield* promise(() =>
          who.openai.chat.completions.create({
            model: "chat-pro",
            messages: QUESTION,
            stream: true,
            stream_options: { include_usage: true }
          })
        )
        const chunks = yield* promise(async () => {
          const all = []
          for await (const c of stream) all.push(c)
          return all
        })
        expect(bodies[0]).toMatchObject({ stream: true, stream_options: { include_usage: true }, max_tokens: 4096 })
        const last = chunks.at(-1)! as (typeof chunks)[number] & { svc: { charged_micros: number } }
        const usage = {
          promptTokens: ChatTokens.estimatePrompt("o200k_base", QUESTION),
          completionTokens: ChatTokens.countText("o200k_base", "Oslo is the capital.")
        }
        expect(last.usage).toMatchObject({ prompt_tokens: usage.promptTokens, completion_tokens: usage.completionTokens })
        expect(last.svc.charged_micros).toBe(ChatPrices.cost(tiersOf("chat-pro"), usage))
        expect(yield* T.movements(who, last.id)).toContainEqual(["charge", last.svc.charged_micros])
      })
    )

    it.effect("a client that disconnects mid-stream stops the upstream and pays for what it received", () =>
      Effect.gen(function* () {
        let upstreamCancelled = false
        const pieces = [
          chunk({ role: "assistant", content: "" }),
          ...Array.from({ length: 200 }, (_, i) => chunk({ content: ` w${i}` }))
        ]
        answerUpstream(() => sse(pieces, { gapMs: 20, onCancel: () => (upstreamCancelled = true) }))
        const who = yield* T.customer(1_000_000)
        const controller = new AbortController()
        const received: Array<string> = []
        yield* failure(async () => {
          const stream = await who.openai.chat.completions.create(
            { model: "chat-pro", messages: QUESTION, stream: true },
            { signal: controller.signal }
          )
          for await (const c of stream) {
            received.push(c.choices[0]?.delta.content ?? "")
            if (received.length === 4) controller.abort()
          }
        })
        const record = yield* T.eventually(
          Effect.map(T.call("/api/v1/chat/requests", who), (r) => r.body.requests[0]),
          (r) => r !== undefined && r.status !== "open"
        )
        expect(record).toMatchObject({ status: "partial", errorCode: "CLIENT_DISCONNECTED" })
        // The server may have relayed a few more pieces than the client read before it noticed.
        const completion = record.usage.completion_tokens
        expect(completion).toBeGreaterThanOrEqual(ChatTokens.countText("o200k_base", received.join("")))
        expect(completion).toBeLessThan(ChatTokens.countText("o200k_base", pieces.join("")) / 4)
        expect(yield* T.movements(who, record.id)).toEqual([["charge", record.chargedMicros]])
        expect(
          yield* T.eventually(
            Effect.sync(() => upstreamCancelled),
            (cancelled) => cancelled
          )
        ).toBe(true)
        expect((yield* T.usage(who)).reservedMicros).toBe(0)
      })
    )

    it.effect("parallel requests on an account that can afford only some never overdraw", () =>
      Effect.gen(function* () {
        answerUpstream(async () => {
          await new Promise((resolve) => setTimeout(resolve, 150))
          return HttpResponse.json({
            choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
            usage: { prompt_tokens: 10, completion_tokens: 1000 }
          })
        })
        const reservation = ChatPrices.cost(tiersOf("chat-pro"), {
          promptTokens: ChatTokens.estimatePrompt("o200k_base", QUESTION),
          completionTokens: 1000
        })
        const credits = 3 * reservation + Math.floor(reservation / 2)
        const who = yield* T.customer(credits)
        const results = yield* promise(() =>
          Promise.allSettled(
            Array.from({ length: 10 }, () =>
              who.openai.chat.completions.create({ model: "chat-pro", messages: QUESTION, max_tokens: 1000 })
            )
          )
        )
        const ok = results.filter((r) => r.status === "fulfilled")
        const refused = results.flatMap((r) => (r.status === "rejected" ? [r.reason as APIError] : []))
        expect(ok).toHaveLength(3)
        // The client keeps the `error` member of the body as the error's detail (the spec's body carries `code` beside it).
        expect(refused.map((e) => [e.status, String(e.error).startsWith("This request may cost up to")])).toEqual(
          Array.from({ length: 7 }, () => [409, true])
        )
        const usage = yield* T.usage(who)
        const charges = ok.reduce(
          (sum, r) => sum + (r.value as unknown as { svc: { charged_micros: number } }).svc.charged_micros,
          0
        )
        expect(usage.reservedMicros).toBe(0)
        expect(usage.balanceMicros).toBe(credits - charges)
        expect(usage.balanceMicros).toBeGreaterThanOrEqual(0)
      })
    )
  })

  describe("errors and history", () => {
    it.effect("refuses what it must before any upstream call", () =>
      Effect.gen(function* () {
        const bodies = answerUpstream(() => HttpResponse.json({}))
        const post = (who: T.Customer | undefined, body: unknown) =>
          T.call("/api/v1/chat/completions", who, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(body)
          })
        const rich = yield* T.customer(1_000_000)
        const poor = yield* T.customer(1)
        const readOnly = yield* T.customer(1_000_000, ["usage:read"])
        const cases: Array<[T.Customer | undefined, unknown, number, string]> = [
          [undefined, { model: "chat-pro", messages: QUESTION }, 401, "AUTH_REQUIRED"],
          [readOnly, { model: "chat-pro", messages: QUESTION }, 403, "INSUFFICIENT_SCOPE"],
          [rich, { model: "chat-pro" }, 400, "INVALID_REQUEST"],
          [rich, { model: "nope", messages: QUESTION }, 404, "MODEL_NOT_FOUND"],
          [poor, { model: "chat-pro", messages: QUESTION }, 409, "INSUFFICIENT_CREDITS"]
        ]
        for (const [who, body, status, code] of cases) {
          const reply = yield* post(who, body)
          expect([reply.status, reply.body.code], code).toEqual([status, code])
        }
        expect(bodies).toEqual([])
      })
    )

    it.effect("lists requests newest first, a page at a time; checks limit and cursor", () =>
      Effect.gen(function* () {
        const who = yield* T.customer(1_000_000)
        const other = yield* T.customer(1_000_000)
        const ids: Array<string> = []
        for (let i = 0; i < 3; i++) {
          const completion = yield* promise(() =>
            who.openai.chat.completions.create({ model: "taskmeter-local", messages: [{ role: "user", content: `n${i}` }] })
          )
          ids.unshift(completion.id)
        }
        const first = yield* T.call("/api/v1/chat/requests?limit=2", who)
        expect(first.body.requests.map((r: { id: string }) => r.id)).toEqual(ids.slice(0, 2))
        expect(first.headers.get("cache-control")).toBe("no-store")
        expect((yield* T.call(`/api/v1/chat/requests/${ids[0]}`, who)).headers.get("cache-control")).toBe("no-store")
        const second = yield* T.call(`/api/v1/chat/requests?limit=2&before=${first.body.nextCursor}`, who)
        expect(second.body).toEqual({ requests: [expect.objectContaining({ id: ids[2] })], nextCursor: null })
        expect(JSON.stringify(first.body)).not.toContain("You said")
        for (const limit of ["0", "101", "x"]) {
          expect((yield* T.call(`/api/v1/chat/requests?limit=${limit}`, who)).body.code).toBe("INVALID_REQUEST")
        }
        expect((yield* T.call(`/api/v1/chat/requests?before=${ids[0]}`, other)).status).toBe(404)
        expect((yield* T.call("/api/v1/chat/requests?before=garbage", who)).body.code).toBe("REQUEST_NOT_FOUND")
        expect((yield* T.call(`/api/v1/chat/requests/${ids[0]}`, other)).body.code).toBe("REQUEST_NOT_FOUND")
      })
    )
  })
})
