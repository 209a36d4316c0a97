/**
 * The chat endpoints as an HttpApi group, for the OpenAPI document only (OpenApiDocument): they
 * are served as raw routes (chat/ChatServer), because one request answers either JSON or a
 * server-sent event stream. Described like every other endpoint (Authentication, scopes,
 * ErrorBody responses), with ChatWire's schemas: those the requests are decoded with.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Errors } from "@taskmeter/kernel"
import * as ChatWire from "./ChatWire.ts"
import { parameterSchemas } from "./OpenApiParameters.ts"
import { Authentication, requireScope } from "./Security.ts"

export const DEFAULT_PAGE_SIZE = 100
export const MAX_PAGE_SIZE = 100

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
        description:
          "The completion (`stream` false or absent), or with `stream: true` a `text/event-stream` of " +
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
      success: ChatWire.ChatModels,
      error: [Errors.ApiUnavailable]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Chat models and token prices",
        description:
          "The callable chat models in the common list format; `pricing.tiers` hold USD per million tokens, " +
          "by prompt size. No credentials needed."
      })
    ),
    HttpApiEndpoint.post("completions", "/api/v1/chat/completions", {
      payload: ChatWire.ChatCompletionRequest,
      success: ChatWire.ChatCompletion,
      error: [
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
      ]
    })
      .middleware(Authentication)
      .annotateMerge(
        OpenApi.annotations({
          summary: "Create a chat completion",
          description:
            "The common chat-completion format, billed per token: the credits a request can cost at most " +
            "(its prompt and its output cap) are reserved first, and the tokens it used are charged when it ends. " +
            "Upstream failures charge nothing."
        })
      )
      .annotateMerge(requireScope("chat:create", eventStream)),
    HttpApiEndpoint.get("requests", "/api/v1/chat/requests", {
      query: {
        limit: Schema.optionalKey(PageSize),
        before: Schema.optionalKey(Schema.String.annotate({ description: "The nextCursor of the previous page." }))
      },
      success: ChatWire.ChatRequestPage,
      error: [Errors.InvalidRequest, Errors.RequestNotFound, Errors.ApiUnavailable]
    })
      .middleware(Authentication)
      .annotateMerge(
        OpenApi.annotations({
          summary: "Chat requests",
          description:
            "The caller's chat requests with usage and charge, newest first. An unknown or foreign cursor is REQUEST_NOT_FOUND."
        })
      )
      .annotateMerge(
        requireScope(
          "usage:read",
          parameterSchemas(
            { limit: PageSize },
            {
              limit: { default: DEFAULT_PAGE_SIZE, description: `Requests per page, 1 to ${MAX_PAGE_SIZE}.` }
            }
          )
        )
      ),
    HttpApiEndpoint.get("request", "/api/v1/chat/requests/:id", {
      params: { id: Schema.String },
      success: ChatWire.ChatRequestView,
      error: [Errors.RequestNotFound, Errors.ApiUnavailable]
    })
      .middleware(Authentication)
      .annotateMerge(
        OpenApi.annotations({
          summary: "One chat request",
          description: "Metadata, usage and charge of one of the caller's chat requests; any other id is REQUEST_NOT_FOUND."
        })
      )
      .annotateMerge(requireScope("usage:read"))
  )
  .annotate(OpenApi.Description, "Chat completions billed per token (OpenAI SDKs work against `<server>/api/v1`).")
