import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { type ChatCompletions, type ChatStore, Errors, Ids, Money, StoreError } from "@taskmeter/kernel"
import * as ChatResponses from "../../src/chat/ChatResponses.ts"

const request: ChatStore.ChatRequestRecord = {
  id: Ids.makeChatRequestId(),
  model: "chat-pro",
  status: "open",
  reservedMicros: Money.micros(900),
  chargedMicros: null,
  usage: null,
  finishReason: null,
  errorCode: null,
  createdAt: new Date("2026-01-01T00:00:01.900Z"),
  completedAt: null
}
const created = 1767225601

/** The `data:` payloads of a stream of events, as a client reads them. */
const sent = (events: ReadonlyArray<ChatCompletions.ChatEvent>, includeUsage = false) =>
  Effect.map(Stream.runCollect(ChatResponses.eventStream(request, Stream.fromIterable(events), { includeUsage })), (chunks) => {
    const text = chunks.map((chunk) => new TextDecoder().decode(chunk)).join("")
    expect(text.endsWith("\n\n")).toBe(true)
    return text
      .split("\n\n")
      .slice(0, -1)
      .map((event) => event.replace(/^data: /, ""))
  })

const hello: ChatCompletions.ChatEvent = { _tag: "Delta", delta: { role: "assistant", content: "Hi" }, finishReason: null }

describe("ChatResponses.eventStream", () => {
  const finished: ReadonlyArray<ChatCompletions.ChatEvent> = [
    hello,
    { _tag: "Delta", delta: {}, finishReason: "stop", logprobs: { content: [] } },
    { _tag: "Finished", usage: { promptTokens: 10, completionTokens: 2 }, chargedMicros: Money.micros(42) }
  ]
  const head = { id: request.id, object: "chat.completion.chunk", created, model: "chat-pro", system_fingerprint: "fp_taskmeter" }
  const usage = {
    prompt_tokens: 10,
    completion_tokens: 2,
    total_tokens: 12,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0
    }
  }

  it.effect("sends each delta as a chunk, the one with finish_reason with the charge, then [DONE]", () =>
    Effect.gen(function* () {
      expect(yield* sent(finished)).toEqual([
        JSON.stringify({ ...head, choices: [{ index: 0, delta: { role: "assistant", content: "Hi" }, finish_reason: null }] }),
        JSON.stringify({
          ...head,
          choices: [{ index: 0, delta: {}, finish_reason: "stop", logprobs: { content: [] } }],
          svc: { charged_micros: 42 }
        }),
        "[DONE]"
      ])
    })
  )

  it.effect("writes a delta with logprobs and tool-call fragments exactly as its chunk's JSON", () =>
    Effect.gen(function* () {
      const delta = { tool_calls: [{ index: 0, function: { name: "weather", arguments: '{"city":"O\\"slo\\u2028"}' } }] }
      const logprobs = { content: [{ token: "Os", logprob: -0.25, bytes: [79, 115], top_logprobs: [] }] }
      const events = yield* sent([{ _tag: "Delta", delta, finishReason: null, logprobs }, ...finished.slice(1)])
      expect(events[0]).toBe(JSON.stringify({ ...head, choices: [{ index: 0, delta, finish_reason: null, logprobs }] }))
    })
  )

  it.effect("adds the usage chunk with empty choices only when include_usage asks for it", () =>
    Effect.gen(function* () {
      const events = yield* sent(finished, true)
      expect(events.slice(2)).toEqual([JSON.stringify({ ...head, choices: [], usage, svc: { charged_micros: 42 } }), "[DONE]"])
    })
  )

  it.effect("ends a stream that could not finish with one error event and no [DONE]", () =>
    Effect.gen(function* () {
      const broken = yield* sent([
        hello,
        {
          _tag: "Failed",
          error: new Errors.UpstreamError({ message: "The model provider failed the request." }),
          usage: { promptTokens: 10, completionTokens: 1 },
          chargedMicros: Money.micros(7)
        }
      ])
      expect(broken.slice(1)).toEqual([
        JSON.stringify({
          error: { code: "UPSTREAM_ERROR", message: "The model provider failed the request.", type: "upstream_error" },
          usage: { ...usage, completion_tokens: 1, total_tokens: 11 },
          svc: { charged_micros: 7 }
        })
      ])
      const storeDown = yield* sent([
        {
          _tag: "Failed",
          error: new StoreError.StoreUnavailable({ message: "connection refused" }),
          usage: null,
          chargedMicros: Money.ZERO
        }
      ])
      expect(storeDown).toEqual([
        JSON.stringify({
          error: {
            code: "API_UNAVAILABLE",
            message: "The API is temporarily unavailable; nothing was charged.",
            type: "api_error"
          },
          usage: null,
          svc: { charged_micros: 0 }
        })
      ])
    })
  )
})

describe("ChatResponses.model", () => {
  it("shows the tiers as exact USD strings and as integer micros", () => {
    const model = ChatResponses.model({
      id: "chat-pro",
      price: {
        enabled: true,
        provider: "upstream",
        contextLength: 1_000_000,
        created: 1767225600,
        tiers: [
          {
            upToPromptTokens: 200_000,
            promptMicrosPerMillion: Money.micros(1_250_000),
            completionMicrosPerMillion: Money.micros(10_000_000)
          },
          {
            upToPromptTokens: null,
            promptMicrosPerMillion: Money.micros(2_500_000),
            completionMicrosPerMillion: Money.micros(15_000_000)
          }
        ]
      }
    })
    expect(model).toEqual({
      id: "chat-pro",
      object: "model",
      created: 1767225600,
      owned_by: "upstream",
      context_length: 1_000_000,
      pricing: {
        currency: "USD",
        tiers: [
          {
            up_to_prompt_tokens: 200_000,
            prompt_usd_per_million: "1.250000",
            completion_usd_per_million: "10.000000",
            prompt_micros_per_million: 1_250_000,
            completion_micros_per_million: 10_000_000
          },
          {
            up_to_prompt_tokens: null,
            prompt_usd_per_million: "2.500000",
            completion_usd_per_million: "15.000000",
            prompt_micros_per_million: 2_500_000,
            completion_micros_per_million: 15_000_000
          }
        ]
      }
    })
  })
})
