/**
 * The chat endpoints on the server's HttpRouter beside the API: GET /api/v1/chat/models (public),
 * POST /api/v1/chat/completions (`chat:create`; JSON or `text/event-stream` ending `data: [DONE]`),
 * GET /api/v1/chat/requests and /{id} (`usage:read`), in ChatWire's format so OpenAI SDKs work
 * against `<server>/api/v1` (bodies decoded by ChatRequestBody, answers built by ChatResponses).
 * Errors are `{ code, error }` with Retry-After on 429 (ErrorResponse); every completions answer
 * has an `x-request-id` (the chat request's id, or a `req_` id when none was opened).
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { ChatBilling, ChatCompletions, Errors } from "@taskmeter/kernel"
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../api/ChatApi.ts"
import * as ErrorResponse from "../ErrorResponse.ts"
import * as JsonBody from "../JsonBody.ts"
import { authenticate } from "./ChatAuth.ts"
import * as ChatRequestBody from "./ChatRequestBody.ts"
import * as ChatResponses from "./ChatResponses.ts"

const pageSize = (text: string | undefined) => {
  if (text === undefined) return Effect.succeed(DEFAULT_PAGE_SIZE)
  const limit = /^\d{1,3}$/.test(text) ? Number(text) : Number.NaN
  return limit >= 1 && limit <= MAX_PAGE_SIZE
    ? Effect.succeed(limit)
    : Effect.fail(
        new Errors.InvalidRequest({ message: `Invalid query parameter limit: must be an integer from 1 to ${MAX_PAGE_SIZE}.` })
      )
}

const models = Effect.gen(function* () {
  const completions = yield* ChatCompletions.ChatCompletions
  return HttpServerResponse.jsonUnsafe(ChatResponses.models(yield* completions.models))
})

const completions = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const caller = yield* authenticate(request, "chat:create")
  const body = yield* JsonBody.read(request)
  const chatRequest = yield* Effect.fromResult(ChatRequestBody.decode(body))
  const created = yield* (yield* ChatCompletions.ChatCompletions).create(caller, chatRequest)
  const requestId = { "x-request-id": created.request.id }
  if (created._tag === "Completion") {
    return HttpServerResponse.jsonUnsafe(ChatResponses.completion(created), { headers: requestId })
  }
  const includeUsage = ChatRequestBody.includeUsage(body)
  return HttpServerResponse.stream(ChatResponses.eventStream(created.request, created.events, { includeUsage }), {
    contentType: "text/event-stream",
    headers: { "cache-control": "no-cache", "x-accel-buffering": "no", ...requestId }
  })
}).pipe(
  Effect.catchCause((cause) =>
    Effect.map(ErrorResponse.fromCause(cause), HttpServerResponse.setHeader("x-request-id", `req_${randomUUID()}`))
  )
)

const list = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const caller = yield* authenticate(request, "usage:read")
  const query = new URL(request.url, "http://localhost").searchParams
  const limit = yield* pageSize(query.get("limit") ?? undefined)
  const before = query.get("before") ?? undefined
  const page = yield* (yield* ChatBilling.ChatBilling).list(caller, { limit, before })
  return HttpServerResponse.jsonUnsafe({ requests: page.requests.map(ChatResponses.requestView), nextCursor: page.nextCursor })
})

const get = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const caller = yield* authenticate(request, "usage:read")
  const { id } = yield* HttpRouter.params
  const record = yield* (yield* ChatBilling.ChatBilling).get(caller, id ?? "")
  return HttpServerResponse.jsonUnsafe(ChatResponses.requestView(record))
})

/** The chat routes on the HttpRouter in context. */
export const layer = HttpRouter.use((router) =>
  Effect.gen(function* () {
    yield* router.add("GET", "/api/v1/chat/models", models)
    yield* router.add("POST", "/api/v1/chat/completions", completions)
    yield* router.add("GET", "/api/v1/chat/requests", list)
    yield* router.add("GET", "/api/v1/chat/requests/:id", get)
  })
)
