/**
 * The chat upstream interface, version 1, that an adapter (any OpenAI-compatible API, or the offline
 * local model) implements for ChatCompletions: the caller's request in the common chat-completion
 * format plus a completion cap it must send upstream, replies in the same format. Failures are one
 * `ChatProviderError` reason (RateLimited 429, InvalidRequest 400, Unavailable and Timeout 502).
 * Interrupting `complete`, or closing the Scope of `stream`, aborts the upstream request.
 */
import type { Effect, Scope, Stream } from "effect"
import { Context, Data, Layer } from "effect"
import type { TokenUsage } from "./TokenUsage.ts"

export type ChatProviderErrorReason = "RateLimited" | "InvalidRequest" | "Unavailable" | "Timeout"

export class ChatProviderError extends Data.TaggedError("ChatProviderError")<{
  readonly reason: ChatProviderErrorReason
  readonly message: string
  readonly status?: number | undefined
  /** For RateLimited: the upstream's Retry-After, when it gave one. */
  readonly retryAfterSeconds?: number | undefined
  readonly cause?: unknown
}> {}

export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }
export type JsonObject = { readonly [key: string]: Json }

export interface ChatCall {
  /** Our chat model id; the adapter maps it to its upstream's model id. */
  readonly model: string
  /**
   * The request body to forward, in the common wire format, without `model`, `stream`,
   * `stream_options` or token caps: `messages` always, and whichever of `tools`,
   * `tool_choice`, `temperature`... the caller gave.
   */
  readonly body: JsonObject
  /** The completion-token cap to send upstream (as max_tokens or max_completion_tokens). */
  readonly maxTokens: number
}

/** The named upstream that answered a call, and its cost per million tokens when configured. */
export interface ServedBy {
  readonly upstream: string
  readonly costPromptMicrosPerMillion?: number | undefined
  readonly costCompletionMicrosPerMillion?: number | undefined
}

/** What `usage` cost at the upstream's prices, rounded up to a micro; null when it has none. */
export const upstreamCost = (served: ServedBy, usage: TokenUsage): number | null =>
  served.costPromptMicrosPerMillion === undefined && served.costCompletionMicrosPerMillion === undefined
    ? null
    : Math.ceil(
        (usage.promptTokens * (served.costPromptMicrosPerMillion ?? 0) +
          usage.completionTokens * (served.costCompletionMicrosPerMillion ?? 0)) /
          1_000_000
      )

export interface ChatReply {
  /** The assistant message as the upstream gave it (content, tool_calls, refusal...). */
  readonly message: JsonObject
  readonly finishReason: string | null
  readonly logprobs?: Json | undefined
  /** undefined when the upstream did not report usage. */
  readonly usage: TokenUsage | undefined
  /** The named upstream that answered, when the adapter routes over some. */
  readonly servedBy?: ServedBy | undefined
}

export type ChatStreamPart =
  | {
      readonly _tag: "Delta"
      /** The choice's delta as the upstream gave it (role, content, tool_calls fragments...). */
      readonly delta: JsonObject
      readonly finishReason: string | null
      readonly logprobs?: Json | undefined
    }
  | { readonly _tag: "Usage"; readonly usage: TokenUsage }
  /** The named upstream that answers, sent before its first part by an adapter that routes over some. */
  | { readonly _tag: "Served"; readonly servedBy: ServedBy }

/**
 * Whether a stream's delta carries output (text, a tool call...), not only the role: a stream sends
 * the first such delta out before doing anything else, so that the first token is never held behind
 * the rest of what arrived with it.
 */
export const carriesOutput = (delta: JsonObject): boolean => {
  for (const key in delta) {
    const value = delta[key]
    if (key !== "role" && value !== null && value !== "") return true
  }
  return false
}

export interface ChatProviderV1 {
  readonly specificationVersion: "v1"
  /** The name the chat price list's `provider` refers to, e.g. "local" or "upstream". */
  readonly provider: string
  /** Whether it serves this chat model; absent: every model the price list gives it. */
  readonly serves?: ((model: string) => boolean) | undefined
  readonly complete: (call: ChatCall) => Effect.Effect<ChatReply, ChatProviderError>
  /**
   * Sends a streaming request and waits until the upstream has accepted it: the outer effect
   * fails when the upstream refuses the request, the stream when it breaks off later. The
   * connection belongs to the Scope.
   */
  readonly stream: (
    call: ChatCall
  ) => Effect.Effect<Stream.Stream<ChatStreamPart, ChatProviderError>, ChatProviderError, Scope.Scope>
}

/** The configured chat upstreams, by provider name. */
export class ChatProviders extends Context.Service<
  ChatProviders,
  {
    readonly get: (provider: string) => ChatProviderV1 | undefined
  }
>()("@taskmeter/kernel/ChatProviders") {}

export const makeProviders = (providers: ReadonlyArray<ChatProviderV1>): ChatProviders["Service"] => {
  const byName = new Map(providers.map((provider) => [provider.provider, provider]))
  return ChatProviders.of({ get: (name) => byName.get(name) })
}

export const layer = (providers: ReadonlyArray<ChatProviderV1>): Layer.Layer<ChatProviders> =>
  Layer.succeed(ChatProviders, makeProviders(providers))
