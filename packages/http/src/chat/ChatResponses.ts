/**
 * What the chat routes answer, built from the kernel's wire-neutral results in the shapes of
 * ChatWire: the completion, the stream as server-sent `chat.completion.chunk` events (the one with
 * finish_reason held until the charge is known and sent with `svc.charged_micros`; with
 * `include_usage` a last one with empty choices, usage and svc; then `[DONE]`; or one
 * ChatStreamError event when the stream could not finish), the model list and the request views.
 */
import { Array as Arr, Cause, Effect, Pull, Stream } from "effect"
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

/**
 * The SSE event of a delta without a finish reason, the stream's usual event: the text
 * `JSON.stringify(chunk(...))` gives, with the part shared by every chunk of the request (`head`,
 * up to `"choices":`) written once per stream.
 */
const deltaEvent = (head: string, event: Delta): string =>
  `${head}[{"index":0,"delta":${JSON.stringify(event.delta)},"finish_reason":null${
    event.logprobs === undefined ? "" : `,"logprobs":${JSON.stringify(event.logprobs)}`
  }}]}\n\n`

/**
 * The server-sent events of a stream, `[DONE]` after one that finished. The wire events of a chunk
 * of kernel events go out as one write (each write is a system call); after the one with the reply's
 * first output, the next pull first lets Node send it (it corks writes until the tick ends).
 */
export const eventStream = (
  request: ChatStore.ChatRequestRecord,
  events: Stream.Stream<ChatCompletions.ChatEvent>,
  options: { readonly includeUsage: boolean }
): Stream.Stream<Uint8Array> =>
  Stream.transformPull(events, (pull) =>
    Effect.sync(() => {
      const created = seconds(request.createdAt)
      const head =
        `data: {"id":${JSON.stringify(request.id)},"object":"chat.completion.chunk","created":${created},` +
        `"model":${JSON.stringify(request.model)},"system_fingerprint":"${SYSTEM_FINGERPRINT}","choices":`
      const held: { finish: Delta | undefined } = { finish: undefined }
      /** Finished (then `[DONE]` went with it) or Failed (no `[DONE]`) was seen. */
      let ended = false
      let outputSent = false
      let flushFirst = false
      let over = false
      const write = (chunk: ReadonlyArray<ChatCompletions.ChatEvent>): string => {
        let text = ""
        for (const event of chunk) {
          if (event._tag === "Delta" && event.finishReason === null && held.finish === undefined) {
            text += deltaEvent(head, event)
            if (!outputSent && ChatProvider.carriesOutput(event.delta)) outputSent = flushFirst = true
            continue
          }
          for (const wire of streamEvents(request, created, options.includeUsage, held, event)) {
            text += `data: ${JSON.stringify(wire)}\n\n`
          }
          if (event._tag !== "Delta") ended = true
          else if (!outputSent && ChatProvider.carriesOutput(event.delta)) outputSent = flushFirst = true
          if (event._tag === "Finished") text += DONE_TEXT
        }
        return text
      }
      const next: Pull.Pull<Arr.NonEmptyReadonlyArray<Uint8Array>, never, void> = Effect.suspend(() => {
        if (over) return Cause.done()
        if (flushFirst) {
          flushFirst = false
          return Effect.andThen(Effect.yieldNow, next)
        }
        return Pull.matchEffect(pull, {
          onSuccess: (chunk) => {
            const text = write(chunk)
            return text.length === 0 ? next : Effect.succeed(Arr.of(encoder.encode(text)))
          },
          onFailure: Effect.failCause,
          onDone: () => {
            over = true
            return ended ? Cause.done() : Effect.succeed(Arr.of(DONE))
          }
        })
      })
      return next
    })
  )

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
