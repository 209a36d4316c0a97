/**
 * What the chat routes answer, built from the kernel's wire-neutral results in the shapes of
 * ChatWire: the completion, the stream as server-sent `chat.completion.chunk` events (the one with
 * finish_reason held until the charge is known and sent with `svc.charged_micros`; with
 * `include_usage` a last one with empty choices, usage and svc; then `[DONE]`; or one
 * ChatStreamError event when the stream could not finish), the model list and the request views.
 */
import { Effect, Stream } from "effect"
import { type ChatCompletions, ChatProvider, type ChatStore, Money, type TokenUsage } from "@taskmeter/kernel"
import type * as ChatWire from "../api/ChatWire.ts"

const seconds = (date: Date): number => Math.floor(date.getTime() / 1000)

/** The `system_fingerprint` of every completion and chunk. */
export const SYSTEM_FINGERPRINT = "fp_taskmeter"

export const usage = (usage: TokenUsage.TokenUsage): ChatWire.WireUsage => ({
  prompt_tokens: usage.promptTokens,
  completion_tokens: usage.completionTokens,
  total_tokens: usage.promptTokens + usage.completionTokens,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
  completion_tokens_details: {
    reasoning_tokens: 0,
    audio_tokens: 0,
    accepted_prediction_tokens: 0,
    rejected_prediction_tokens: 0
  }
})

export const completion = (
  completed: Extract<ChatCompletions.Created, { readonly _tag: "Completion" }>
): ChatWire.ChatCompletion => ({
  id: completed.request.id,
  object: "chat.completion",
  created: seconds(completed.request.createdAt),
  model: completed.request.model,
  system_fingerprint: SYSTEM_FINGERPRINT,
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

type Delta = Extract<ChatCompletions.ChatEvent, { readonly _tag: "Delta" }>

const chunk = (
  request: ChatStore.ChatRequestRecord,
  created: number,
  choices: ChatWire.ChatCompletionChunk["choices"],
  extra: Pick<ChatWire.ChatCompletionChunk, "usage" | "svc"> = {}
): ChatWire.ChatCompletionChunk => ({
  id: request.id,
  object: "chat.completion.chunk",
  created,
  model: request.model,
  system_fingerprint: SYSTEM_FINGERPRINT,
  choices,
  ...extra
})

const choice = (event: Delta): ChatWire.ChatCompletionChunk["choices"][number] => ({
  index: 0,
  delta: event.delta,
  finish_reason: event.finishReason,
  ...(event.logprobs === undefined ? {} : { logprobs: event.logprobs })
})

const failure = (event: Extract<ChatCompletions.ChatEvent, { readonly _tag: "Failed" }>): ChatWire.ChatStreamError => ({
  error:
    event.error._tag === "StoreUnavailable"
      ? { code: "API_UNAVAILABLE", message: "The API is temporarily unavailable; nothing was charged.", type: "api_error" }
      : { code: event.error.code, message: event.error.message, type: "upstream_error" },
  usage: event.usage === null ? null : usage(event.usage),
  svc: { charged_micros: event.chargedMicros }
})

/**
 * The wire events of one kernel event. The delta with a finish reason is held (in `held`) until
 * the stream's end says what was charged: it goes out then, with `svc`, before the usage chunk.
 */
export const streamEvents = (
  request: ChatStore.ChatRequestRecord,
  created: number,
  includeUsage: boolean,
  held: { finish: Delta | undefined },
  event: ChatCompletions.ChatEvent
): ReadonlyArray<ChatWire.ChatCompletionChunk | ChatWire.ChatStreamError> => {
  const release = (svc?: ChatWire.Svc) => {
    const finish = held.finish
    held.finish = undefined
    return finish === undefined ? [] : [chunk(request, created, [choice(finish)], svc === undefined ? {} : { svc })]
  }
  switch (event._tag) {
    case "Delta":
      if (event.finishReason !== null) {
        const before = release()
        held.finish = event
        return before
      }
      return [...release(), chunk(request, created, [choice(event)])]
    case "Finished": {
      const svc = { charged_micros: event.chargedMicros }
      return [...release(svc), ...(includeUsage ? [chunk(request, created, [], { usage: usage(event.usage), svc })] : [])]
    }
    case "Failed":
      return [...release(), failure(event)]
  }
}

const encoder = new TextEncoder()
const DONE_TEXT = "data: [DONE]\n\n"
const DONE = encoder.encode(DONE_TEXT)

/** The server-sent events of a stream, `[DONE]` after one that finished. */
export const eventStream = (
  request: ChatStore.ChatRequestRecord,
  events: Stream.Stream<ChatCompletions.ChatEvent>,
  options: { readonly includeUsage: boolean }
): Stream.Stream<Uint8Array> =>
  Stream.suspend(() => {
    const created = seconds(request.createdAt)
    const held: { finish: Delta | undefined } = { finish: undefined }
    /** Finished (then `[DONE]` went with it) or Failed (no `[DONE]`) was seen. */
    let ended = false
    /** The reply's first output was written: the next pull first lets Node send it (it corks writes until the tick ends). */
    let outputSent = false
    let flushFirst = false
    // The wire events of a chunk of kernel events go out as one write (none when they give none);
    // map and flattenIterable would run an inner stream per event, and each write is a system call.
    const written = events.pipe(
      Stream.mapAccumArray(
        () => undefined,
        (state, chunk): readonly [undefined, ReadonlyArray<Uint8Array>] => {
          let text = ""
          for (const event of chunk) {
            for (const wire of streamEvents(request, created, options.includeUsage, held, event)) {
              text += `data: ${JSON.stringify(wire)}\n\n`
            }
            if (event._tag !== "Delta") ended = true
            else if (!outputSent && ChatProvider.carriesOutput(event.delta)) outputSent = flushFirst = true
            if (event._tag === "Finished") text += DONE_TEXT
          }
          return [state, text.length === 0 ? [] : [encoder.encode(text)]]
        }
      )
    )
    return Stream.transformPull(written, (pull) =>
      Effect.succeed(
        Effect.suspend(() => {
          if (!flushFirst) return pull
          flushFirst = false
          return Effect.andThen(Effect.yieldNow, pull)
        })
      )
    ).pipe(Stream.concat(Stream.suspend(() => (ended ? Stream.empty : Stream.succeed(DONE)))))
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
