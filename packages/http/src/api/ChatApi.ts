/**
 * The chat endpoints as an HttpApi group, for the OpenAPI document only: they are served as raw
 * routes (chat/ChatServer), because one request answers either JSON or a server-sent event
 * stream and messages are forwarded to the upstream as sent, which the kernel checks itself
 * (ChatWire.decodeRequest). Described here like every other endpoint (Authentication, scopes,
 * ErrorBody responses), the group is added to the API for the document (see OpenApiDocument)
 * and never to what the HttpApi server or client builds.
 *
 * The response schemas describe the kernel's wire types (ChatWire, ChatPrices), which are
 * TypeScript types rather than schemas; the tests check that each schema's type is exactly the
 * kernel's. The request schema takes its roles and forwarded members from ChatWire.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ChatWire, Errors } from "@taskmeter/kernel"
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../chat/ChatServer.ts"
import { errors } from "./ApiErrors.ts"
import { parameterSchemas } from "./OpenApiParameters.ts"
import { Authentication, requireScope } from "./Security.ts"

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const TokenCap = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
const Timestamp = Schema.String.annotate({ format: "date-time" })
/** Any other members: allowed, and described by the schema's description. */
const rest = [Schema.Record(Schema.String, Schema.Json)] as const

// Requests

const ContentPart = Schema.StructWithRest(Schema.Struct({ type: Schema.String }), rest).annotate({
  description: "A typed content part (text, image_url...), forwarded as sent."
})

export const ChatMessage = Schema.StructWithRest(
  Schema.Struct({
    role: Schema.Literals(ChatWire.ROLES),
    content: Schema.optionalKey(Schema.NullOr(Schema.Union([Schema.String, Schema.Array(ContentPart)])).annotate({
      description: "A string or an array of content parts; null or absent only in assistant messages."
    })),
    tool_call_id: Schema.optionalKey(Schema.String.annotate({ description: "Required in a tool message." })),
    tool_calls: Schema.optionalKey(Schema.Array(Schema.JsonObject))
  }),
  rest
).annotate({ identifier: "ChatMessage", description: "A conversation message, forwarded to the upstream as sent." })

const forwardedMembers = Object.fromEntries(
  ChatWire.FORWARDED.filter((name) => name !== "tools").map((name) => [
    name,
    Schema.optionalKey(Schema.Json.annotate({ description: "Forwarded to the upstream as given." }))
  ])
)

export const ChatCompletionRequest = Schema.StructWithRest(
  Schema.Struct({
    model: Schema.String.check(Schema.isMinLength(1)).annotate({ description: "An id from GET /api/v1/chat/models." }),
    messages: Schema.NonEmptyArray(ChatMessage),
    stream: Schema.optionalKey(Schema.Boolean.annotate({
      description: "true: the answer is `text/event-stream`, its last chunk carrying usage and svc.charged_micros."
    })),
    stream_options: Schema.optionalKey(Schema.NullOr(Schema.JsonObject).annotate({
      description: "Accepted and ignored: a stream always ends with a usage chunk."
    })),
    max_completion_tokens: Schema.optionalKey(Schema.NullOr(TokenCap).annotate({
      description: "Output cap, at most the model's context length; it sizes the credit reservation. " +
        "When both caps are given the smaller applies; without either a policy default applies."
    })),
    max_tokens: Schema.optionalKey(Schema.NullOr(TokenCap).annotate({ description: "As max_completion_tokens." })),
    n: Schema.optionalKey(Schema.NullOr(Schema.Literal(1)).annotate({ description: "Only one choice is supported." })),
    tools: Schema.optionalKey(Schema.Array(Schema.JsonObject).annotate({
      description: "Tool definitions, forwarded to the upstream."
    })),
    ...forwardedMembers
  }),
  rest
).annotate({
  identifier: "ChatCompletionRequest",
  description: "The common chat-completion request. Members not listed here are accepted and dropped, so that a " +
    "request cannot switch on upstream features that would cost more than was reserved."
})

// Responses

export const ChatUsage = Schema.Struct({
  prompt_tokens: Count,
  completion_tokens: Count,
  total_tokens: Count
}).annotate({ identifier: "ChatUsage" })

export const ChatCharge = Schema.Struct({
  charged_micros: Count.annotate({ description: "What the request cost, in USD micro-units (1 USD = 1000000)." })
}).annotate({ identifier: "ChatCharge" })

const FinishReason = Schema.NullOr(Schema.String).annotate({ description: "stop, length, tool_calls, content_filter..." })

export const ChatCompletion = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("chat.completion"),
  created: Count.annotate({ description: "Unix seconds." }),
  model: Schema.String,
  choices: Schema.Array(Schema.Struct({
    index: Schema.Literal(0),
    message: Schema.JsonObject.annotate({
      description: "The assistant's message as the upstream gave it: role, content, and tool_calls when the model calls tools."
    }),
    finish_reason: FinishReason,
    logprobs: Schema.Json
  })),
  usage: ChatUsage,
  svc: ChatCharge
}).annotate({ identifier: "ChatCompletion" })

export const ChatCompletionChunk = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("chat.completion.chunk"),
  created: Count.annotate({ description: "Unix seconds." }),
  model: Schema.String,
  choices: Schema.Array(Schema.Struct({
    index: Schema.Literal(0),
    delta: Schema.JsonObject.annotate({ description: "The next part of the assistant's message, as the upstream gave it." }),
    finish_reason: FinishReason,
    logprobs: Schema.optionalKey(Schema.Json)
  })).annotate({ description: "Empty in the final chunk." }),
  usage: Schema.optionalKey(ChatUsage),
  svc: Schema.optionalKey(ChatCharge)
}).annotate({
  identifier: "ChatCompletionChunk",
  description: "One `data:` event of a streamed completion; usage and svc come in the final chunk only."
})

export const ChatStreamError = Schema.Struct({
  error: Schema.Struct({
    code: Schema.String.annotate({ description: "An error code (UPSTREAM_ERROR...)." }),
    message: Schema.String,
    type: Schema.Literals(["upstream_error", "api_error"])
  }),
  usage: Schema.NullOr(ChatUsage),
  svc: ChatCharge
}).annotate({
  identifier: "ChatStreamError",
  description: "The last event of a stream that could not finish (no `[DONE]` follows); clients raise it as an error. " +
    "usage and svc say what was charged for the part that was delivered."
})

export const ChatModel = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("model"),
  created: Count.annotate({ description: "Unix seconds (0 when not known)." }),
  owned_by: Schema.String.annotate({ description: "The upstream that serves the model." }),
  context_length: Count,
  pricing: Schema.Struct({
    currency: Schema.Literal("USD"),
    tiers: Schema.Array(Schema.Struct({
      up_to_prompt_tokens: Schema.NullOr(Count).annotate({
        description: "The largest prompt (in tokens) the tier applies to; null for the last, open-ended tier."
      }),
      prompt_usd_per_million: Schema.String.annotate({ description: "Exact decimal USD per million prompt tokens." }),
      completion_usd_per_million: Schema.String.annotate({ description: "Exact decimal USD per million completion tokens." }),
      prompt_micros_per_million: Count,
      completion_micros_per_million: Count
    })).annotate({ description: "By prompt size: a request's prompt size chooses one tier, whose rates apply to all its tokens." })
  })
}).annotate({ identifier: "ChatModel" })

export const ChatModels = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(ChatModel)
}).annotate({ identifier: "ChatModels" })

export const ChatRequest = Schema.Struct({
  id: Schema.String,
  model: Schema.String,
  status: Schema.Literals(["open", "succeeded", "partial", "failed"]).annotate({
    description: "open while it runs; partial when a stream broke off after delivering part of the answer."
  }),
  reservedMicros: Count,
  chargedMicros: Schema.NullOr(Count),
  currency: Schema.Literal("USD"),
  usage: Schema.NullOr(ChatUsage),
  finishReason: FinishReason,
  errorCode: Schema.NullOr(Schema.String).annotate({
    description: "Why it did not succeed: an error code (UPSTREAM_ERROR...) or CLIENT_DISCONNECTED."
  }),
  createdAt: Timestamp,
  completedAt: Schema.NullOr(Timestamp)
}).annotate({ identifier: "ChatRequest", description: "A chat request's metadata, usage and charge; never its text." })

export const ChatRequests = Schema.Struct({
  requests: Schema.Array(ChatRequest).annotate({ description: "Newest first." }),
  nextCursor: Schema.NullOr(Schema.String).annotate({ description: "Pass as `before` for the next (older) page; null at the end." })
}).annotate({ identifier: "ChatRequests" })

const pageSizeRule = `must be an integer from 1 to ${MAX_PAGE_SIZE}`

const PageSize = Schema.NumberFromString.check(
  Schema.isInt({ message: pageSizeRule }),
  Schema.isBetween({ minimum: 1, maximum: MAX_PAGE_SIZE }, { message: pageSizeRule })
)

/** The event stream of `stream: true`, beside the JSON answer. */
const eventStream = (operation: Record<string, any>) => {
  const ok = operation.responses["200"]
  return {
    ...operation,
    responses: {
      ...operation.responses,
      "200": {
        ...ok,
        description: "The completion (`stream` false or absent), or with `stream: true` a `text/event-stream` of " +
          "`data: <ChatCompletionChunk>` events ending with `data: [DONE]`; the last chunk before it has empty " +
          "choices, usage and svc.charged_micros. A stream the upstream breaks off ends instead with one " +
          "`data: <ChatStreamError>` event.",
        content: {
          ...ok.content,
          "text/event-stream": { schema: { type: "string", description: "Server-sent events, as described above." } }
        }
      }
    }
  }
}

export const ChatApi = HttpApiGroup.make("chat")
  .add(
    HttpApiEndpoint.get("models", "/api/v1/chat/models", {
      success: ChatModels,
      error: errors(Errors.ApiUnavailable)
    }).annotateMerge(OpenApi.annotations({
      summary: "Chat models and token prices",
      description: "The callable chat models in the common list format; `pricing.tiers` hold USD per million tokens, " +
        "by prompt size. No credentials needed."
    })),
    HttpApiEndpoint.post("completions", "/api/v1/chat/completions", {
      payload: ChatCompletionRequest,
      success: ChatCompletion,
      error: errors(
        Errors.InvalidRequest,
        Errors.InputTooLarge,
        Errors.ModelNotFound,
        Errors.ModelPriceUnavailable,
        Errors.InsufficientCredits,
        Errors.PaymentReviewRequired,
        Errors.ApiKeyUsageExceeded,
        Errors.RateLimited,
        Errors.ConcurrencyLimited,
        Errors.UpstreamRateLimited,
        Errors.UpstreamError,
        Errors.ApiUnavailable
      )
    })
      .middleware(Authentication)
      .annotateMerge(OpenApi.annotations({
        summary: "Create a chat completion",
        description: "The common chat-completion format, billed per token: the credits a request can cost at most " +
          "(its prompt and its output cap) are reserved first, and the tokens it used are charged when it ends. " +
          "Upstream failures charge nothing."
      }))
      .annotateMerge(requireScope("chat:create", eventStream)),
    HttpApiEndpoint.get("requests", "/api/v1/chat/requests", {
      query: {
        limit: Schema.optionalKey(PageSize),
        before: Schema.optionalKey(Schema.String.annotate({ description: "The nextCursor of the previous page." }))
      },
      success: ChatRequests,
      error: errors(Errors.InvalidRequest, Errors.RequestNotFound, Errors.ApiUnavailable)
    })
      .middleware(Authentication)
      .annotateMerge(OpenApi.annotations({
        summary: "Chat requests",
        description: "The caller's chat requests with usage and charge, newest first. An unknown or foreign cursor is REQUEST_NOT_FOUND."
      }))
      .annotateMerge(requireScope(
        "usage:read",
        parameterSchemas({ limit: PageSize }, {
          limit: { default: DEFAULT_PAGE_SIZE, description: `Requests per page, 1 to ${MAX_PAGE_SIZE}.` }
        })
      )),
    HttpApiEndpoint.get("request", "/api/v1/chat/requests/:id", {
      params: { id: Schema.String },
      success: ChatRequest,
      error: errors(Errors.RequestNotFound, Errors.ApiUnavailable)
    })
      .middleware(Authentication)
      .annotateMerge(OpenApi.annotations({
        summary: "One chat request",
        description: "Metadata, usage and charge of one of the caller's chat requests; any other id is REQUEST_NOT_FOUND."
      }))
      .annotateMerge(requireScope("usage:read"))
  )
  .annotate(OpenApi.Description, "Chat completions billed per token (OpenAI SDKs work against `<server>/api/v1`).")
