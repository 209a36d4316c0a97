/**
 * The wire format of the chat endpoints (the common chat-completion format), as Effect Schemas:
 * the request, the completion and its stream chunks, the model list and the chat request views.
 * The one definition: ChatRequestBody decodes with them, ChatResponses builds what they describe,
 * the OpenAPI document is generated from them. Charges are `svc.charged_micros` (USD micro-units).
 */
import { Schema } from "effect"

export const ROLES = ["system", "developer", "user", "assistant", "tool", "function"] as const

/** Request members passed to the upstream unchanged (besides `messages`). */
export const FORWARDED = [
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "functions",
  "function_call",
  "temperature",
  "top_p",
  "stop",
  "seed",
  "presence_penalty",
  "frequency_penalty",
  "logit_bias",
  "logprobs",
  "top_logprobs",
  "response_format",
  "reasoning_effort",
  "user"
] as const

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const Timestamp = Schema.String.annotate({ format: "date-time" })
/** Any other members: allowed, and described by the schema's description. */
const rest = [Schema.Record(Schema.String, Schema.Json)] as const

// Requests. A `message` annotation is the rule an INVALID_REQUEST names for the value it refuses.

const roleRule = `must be one of ${ROLES.join(", ")}`
const contentRule = "must be a string or an array of content parts"
const partRule = "must be an object with a string type"
const capRule = "must be a whole number of at least 1."
const modelRule = "required (a chat model id)."
const messagesRule = "required (a non-empty array)."

const ContentPart = Schema.JsonObject.annotate({
  description: "A typed content part (text, image_url...), forwarded as sent.",
  message: partRule
}).check(
  Schema.makeFilter((part) => typeof part.type === "string", {
    message: partRule,
    toJsonSchema: () => ({ properties: { type: { type: "string" } }, required: ["type"] })
  })
)

export const ChatMessage = Schema.StructWithRest(
  Schema.Struct({
    role: Schema.Literals(ROLES).annotate({ message: roleRule }).annotateKey({ messageMissingKey: roleRule }),
    content: Schema.optionalKey(
      Schema.NullOr(Schema.Union([Schema.String, Schema.Array(ContentPart)]).annotate({ message: contentRule })).annotate({
        description: "A string or an array of content parts; null or absent only in assistant messages.",
        message: contentRule
      })
    ),
    tool_call_id: Schema.optionalKey(
      Schema.String.annotate({ description: "Required in a tool message.", message: "must be a string" })
    ),
    tool_calls: Schema.optionalKey(
      Schema.Array(Schema.JsonObject.annotate({ message: "must be an object" })).annotate({ message: "must be an array" })
    )
  }),
  rest
)
  .annotate({
    description: "A conversation message, forwarded to the upstream as sent.",
    message: "must be an object"
  })
  .check(
    // The rules that depend on the role, checked once the members themselves are well-formed.
    Schema.makeFilter((message) => {
      if (message.role !== "assistant" && (message.content === undefined || message.content === null)) {
        return { path: ["content"], issue: contentRule }
      }
      if (message.role === "tool" && message.tool_call_id === undefined) {
        return { path: ["tool_call_id"], issue: "required for a tool message" }
      }
      return undefined
    })
  )
  .annotate({ identifier: "ChatMessage" })
export type ChatMessage = typeof ChatMessage.Type

const TokenCap = (description: string) =>
  Schema.optionalKey(
    Schema.NullOr(
      Schema.Int.annotate({ message: capRule }).check(Schema.isGreaterThanOrEqualTo(1, { message: capRule }))
    ).annotate({ description, message: capRule })
  )

const forwardedMembers = Object.fromEntries(
  FORWARDED.filter((name) => name !== "tools").map((name) => [
    name,
    Schema.optionalKey(Schema.Json.annotate({ description: "Forwarded to the upstream as given." }))
  ])
)

/** The request body of POST /api/v1/chat/completions. Its members are checked in this order. */
export const ChatCompletionRequest = Schema.StructWithRest(
  Schema.Struct({
    model: Schema.String.annotate({ description: "An id from GET /api/v1/chat/models.", message: modelRule })
      .check(Schema.isMinLength(1, { message: modelRule }))
      .annotateKey({ messageMissingKey: modelRule }),
    messages: Schema.Array(ChatMessage)
      .annotate({ message: messagesRule })
      .check(Schema.isMinLength(1, { message: messagesRule }))
      .annotateKey({ messageMissingKey: messagesRule }),
    stream: Schema.optionalKey(
      Schema.Boolean.annotate({
        description: "true: the answer is `text/event-stream`; the chunk with finish_reason carries svc.charged_micros.",
        message: "must be a boolean."
      })
    ),
    stream_options: Schema.optionalKey(
      Schema.NullOr(Schema.JsonObject).annotate({
        description: "include_usage: true adds a last chunk with empty choices, usage and svc.",
        message: "must be an object."
      })
    ),
    max_tokens: TokenCap("As max_completion_tokens."),
    max_completion_tokens: TokenCap(
      "Output cap, at most the model's context length; it sizes the credit reservation. " +
        "When both caps are given the smaller applies; without either a policy default applies."
    ),
    n: Schema.optionalKey(
      Schema.NullOr(Schema.Literal(1)).annotate({
        description: "Only one choice is supported.",
        message: "only 1 is supported."
      })
    ),
    tools: Schema.optionalKey(
      Schema.Array(Schema.JsonObject.annotate({ message: "must be a tool definition (an object)." })).annotate({
        description: "Tool definitions, forwarded to the upstream.",
        message: "must be an array of tool definitions."
      })
    ),
    ...forwardedMembers
  }),
  rest
).annotate({
  identifier: "ChatCompletionRequest",
  description:
    "The common chat-completion request. Members not listed here are accepted and dropped, so that a " +
    "request cannot switch on upstream features that would cost more than was reserved.",
  message: "The body must be a JSON object."
})
export type ChatCompletionRequest = typeof ChatCompletionRequest.Type

// Responses

export const WireUsage = Schema.Struct({
  prompt_tokens: Count,
  completion_tokens: Count,
  total_tokens: Count,
  prompt_tokens_details: Schema.Struct({ cached_tokens: Count, audio_tokens: Count }).annotate({
    description: "Not billed apart: 0."
  }),
  completion_tokens_details: Schema.Struct({
    reasoning_tokens: Count,
    audio_tokens: Count,
    accepted_prediction_tokens: Count,
    rejected_prediction_tokens: Count
  }).annotate({ description: "Not billed apart: 0." })
}).annotate({ identifier: "ChatUsage" })
export type WireUsage = typeof WireUsage.Type

export const Svc = Schema.Struct({
  charged_micros: Count.annotate({ description: "What the request cost, in USD micro-units (1 USD = 1000000)." })
}).annotate({ identifier: "ChatCharge" })
export type Svc = typeof Svc.Type

const SystemFingerprint = Schema.String.annotate({ description: "The serving configuration: fp_taskmeter." })

const FinishReason = Schema.NullOr(Schema.String).annotate({ description: "stop, length, tool_calls, content_filter..." })

export const ChatCompletion = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("chat.completion"),
  created: Count.annotate({ description: "Unix seconds." }),
  model: Schema.String,
  system_fingerprint: SystemFingerprint,
  choices: Schema.Array(
    Schema.Struct({
      index: Schema.Literal(0),
      message: Schema.JsonObject.annotate({
        description: "The assistant's message as the upstream gave it: role, content, and tool_calls when the model calls tools."
      }),
      finish_reason: FinishReason,
      logprobs: Schema.Json
    })
  ),
  usage: WireUsage,
  svc: Svc
}).annotate({ identifier: "ChatCompletion" })
export type ChatCompletion = typeof ChatCompletion.Type

export const ChatCompletionChunk = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("chat.completion.chunk"),
  created: Count.annotate({ description: "Unix seconds." }),
  model: Schema.String,
  system_fingerprint: SystemFingerprint,
  choices: Schema.Array(
    Schema.Struct({
      index: Schema.Literal(0),
      delta: Schema.JsonObject.annotate({ description: "The next part of the assistant's message, as the upstream gave it." }),
      finish_reason: FinishReason,
      logprobs: Schema.optionalKey(Schema.Json)
    })
  ).annotate({ description: "Empty in the usage chunk." }),
  usage: Schema.optionalKey(WireUsage),
  svc: Schema.optionalKey(Svc)
}).annotate({
  identifier: "ChatCompletionChunk",
  description:
    "One `data:` event of a streamed completion. The chunk with finish_reason carries svc (the charge); with " +
    "stream_options.include_usage a last chunk with empty choices carries usage and svc."
})
export type ChatCompletionChunk = typeof ChatCompletionChunk.Type

/**
 * The last event of a stream that could not finish (the upstream broke off, or the store could
 * not record the end): `error` is what clients raise; `usage` and `svc` say what was charged
 * for the part that was delivered.
 */
export const ChatStreamError = Schema.Struct({
  error: Schema.Struct({
    code: Schema.String.annotate({ description: "An error code (UPSTREAM_ERROR...)." }),
    message: Schema.String,
    type: Schema.Literals(["upstream_error", "api_error"])
  }),
  usage: Schema.NullOr(WireUsage),
  svc: Svc
}).annotate({
  identifier: "ChatStreamError",
  description:
    "The last event of a stream that could not finish (no `[DONE]` follows); clients raise it as an error. " +
    "usage and svc say what was charged for the part that was delivered."
})
export type ChatStreamError = typeof ChatStreamError.Type

/** One entry of GET /api/v1/chat/models. USD strings are exact (six decimals); micros are the same rates as integers. */
export const ChatModel = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("model"),
  created: Count.annotate({ description: "Unix seconds (0 when not known)." }),
  owned_by: Schema.String.annotate({ description: "The upstream that serves the model." }),
  context_length: Count,
  pricing: Schema.Struct({
    currency: Schema.Literal("USD"),
    tiers: Schema.Array(
      Schema.Struct({
        up_to_prompt_tokens: Schema.NullOr(Count).annotate({
          description: "The largest prompt (in tokens) the tier applies to; null for the last, open-ended tier."
        }),
        prompt_usd_per_million: Schema.String.annotate({ description: "Exact decimal USD per million prompt tokens." }),
        completion_usd_per_million: Schema.String.annotate({ description: "Exact decimal USD per million completion tokens." }),
        prompt_micros_per_million: Count,
        completion_micros_per_million: Count
      })
    ).annotate({ description: "By prompt size: a request's prompt size chooses one tier, whose rates apply to all its tokens." })
  })
}).annotate({ identifier: "ChatModel" })
export type ChatModel = typeof ChatModel.Type

/** GET /api/v1/chat/models. */
export const ChatModels = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(ChatModel)
}).annotate({ identifier: "ChatModels" })
export type ChatModels = typeof ChatModels.Type

/** A chat request as GET /api/v1/chat/requests shows it: metadata, usage and charge, never text. */
export const ChatRequestView = Schema.Struct({
  id: Schema.String,
  model: Schema.String,
  status: Schema.Literals(["open", "succeeded", "partial", "failed"]).annotate({
    description: "open while it runs; partial when a stream broke off after delivering part of the answer."
  }),
  reservedMicros: Count,
  chargedMicros: Schema.NullOr(Count),
  currency: Schema.Literal("USD"),
  usage: Schema.NullOr(WireUsage),
  finishReason: FinishReason,
  errorCode: Schema.NullOr(Schema.String).annotate({
    description: "Why it did not succeed: an error code (UPSTREAM_ERROR...) or CLIENT_DISCONNECTED."
  }),
  createdAt: Timestamp,
  completedAt: Schema.NullOr(Timestamp)
}).annotate({ identifier: "ChatRequest", description: "A chat request's metadata, usage and charge; never its text." })
export type ChatRequestView = typeof ChatRequestView.Type

/** A page of GET /api/v1/chat/requests. */
export const ChatRequestPage = Schema.Struct({
  requests: Schema.Array(ChatRequestView).annotate({ description: "Newest first." }),
  nextCursor: Schema.NullOr(Schema.String).annotate({
    description: "Pass as `before` for the next (older) page; null at the end."
  })
}).annotate({ identifier: "ChatRequests" })
export type ChatRequestPage = typeof ChatRequestPage.Type
