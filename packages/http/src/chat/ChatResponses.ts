/**
 * What the chat routes answer, built from the kernel's wire-neutral results in the shapes of
 * ChatWire: the completion, the stream as server-sent `chat.completion.chunk` events (the last
 * with empty choices, usage and `svc.charged_micros`, then `[DONE]`; or one ChatStreamError
 * event when the stream could not finish), the model list and the chat request views.
 */
import { Stream } from "effect"
import { type ChatCompletions, type ChatStore, Money, type TokenUsage } from "@taskmeter/kernel"
import type * as ChatWire from "../api/ChatWire.ts"

const seconds = (date: Date): number => Math.floor(date.getTime() / 1000)

export const usage = (usage: TokenUsage.TokenUsage): ChatWire.WireUsage => ({
  prompt_tokens: usage.promptTokens,
  completion_tokens: usage.completionTokens,
  total_tokens: usage.promptTokens + usage.completionTokens
})

export const completion = (
  completed: Extract<ChatCompletions.Created, { readonly _tag: "Completion" }>
): ChatWire.ChatCompletion => ({
  id: completed.request.id,
  object: "chat.completion",
  created: seconds(completed.request.createdAt),
  model: completed.request.model,
  choices: [
    {
      index: 0,
      message: completed.message,
      finish_reason: completed.finishReason,
      logprobs: completed.logprobs ?? null
    }
  ],
  usage: usage(completed.usage),
  svc: { charged_micros: completed.chargedMicros }
})

/** One stream event of a request as it goes on the wire. */
export const streamEvent = (
  request: ChatStore.ChatRequestRecord,
  created: number,
  event: ChatCompletions.ChatEvent
): ChatWire.ChatCompletionChunk | ChatWire.ChatStreamError => {
  switch (event._tag) {
    case "Delta":
      return {
        id: request.id,
        object: "chat.completion.chunk",
        created,
        model: request.model,
        choices: [
          {
            index: 0,
            delta: event.delta,
            finish_reason: event.finishReason,
            ...(event.logprobs === undefined ? {} : { logprobs: event.logprobs })
          }
        ]
      }
    case "Finished":
      return {
        id: request.id,
        object: "chat.completion.chunk",
        created,
        model: request.model,
        choices: [],
        usage: usage(event.usage),
        svc: { charged_micros: event.chargedMicros }
      }
    case "Failed":
      return {
        error:
          event.error._tag === "StoreUnavailable"
            ? { code: "API_UNAVAILABLE", message: "The API is temporarily unavailable; nothing was charged.", type: "api_error" }
            : { code: event.error.code, message: event.error.message, type: "upstream_error" },
        usage: event.usage === null ? null : usage(event.usage),
        svc: { charged_micros: event.chargedMicros }
      }
  }
}

const encoder = new TextEncoder()
const DONE = encoder.encode("data: [DONE]\n\n")

/** The server-sent events of a stream, `[DONE]` after one that finished. */
export const eventStream = (
  request: ChatStore.ChatRequestRecord,
  events: Stream.Stream<ChatCompletions.ChatEvent>
): Stream.Stream<Uint8Array> =>
  Stream.suspend(() => {
    const created = seconds(request.createdAt)
    let failed = false
    return events.pipe(
      Stream.map((event) => {
        if (event._tag === "Failed") failed = true
        return encoder.encode(`data: ${JSON.stringify(streamEvent(request, created, event))}\n\n`)
      }),
      Stream.concat(Stream.suspend(() => (failed ? Stream.empty : Stream.succeed(DONE))))
    )
  })

/** A callable model as GET /api/v1/chat/models lists it. */
export const model = ({ id, price }: ChatCompletions.CallableModel): ChatWire.ChatModel => ({
  id,
  object: "model",
  created: price.created ?? 0,
  owned_by: price.provider,
  context_length: price.contextLength,
  pricing: {
    currency: "USD",
    tiers: (price.tiers ?? []).map((tier) => ({
      up_to_prompt_tokens: tier.upToPromptTokens,
      prompt_usd_per_million: Money.formatUsd(tier.promptMicrosPerMillion),
      completion_usd_per_million: Money.formatUsd(tier.completionMicrosPerMillion),
      prompt_micros_per_million: tier.promptMicrosPerMillion,
      completion_micros_per_million: tier.completionMicrosPerMillion
    }))
  }
})

export const models = (callable: ReadonlyArray<ChatCompletions.CallableModel>): ChatWire.ChatModels => ({
  object: "list",
  data: callable.map(model)
})

/** A chat request as GET /api/v1/chat/requests shows it: metadata, usage and charge, never text. */
export const requestView = (record: ChatStore.ChatRequestRecord): ChatWire.ChatRequestView => ({
  id: record.id,
  model: record.model,
  status: record.status,
  reservedMicros: record.reservedMicros,
  chargedMicros: record.chargedMicros,
  currency: "USD",
  usage: record.usage === null ? null : usage(record.usage),
  finishReason: record.finishReason,
  errorCode: record.errorCode,
  createdAt: record.createdAt.toISOString(),
  completedAt: record.completedAt === null ? null : record.completedAt.toISOString()
})
