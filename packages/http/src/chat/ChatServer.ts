/**
 * The chat endpoints, mounted on the server's HttpRouter beside the API:
 *
 * | route                             | auth          | answers                                          |
 * |-----------------------------------|---------------|--------------------------------------------------|
 * | GET  /api/v1/chat/models          | none          | the callable models with their token prices       |
 * | POST /api/v1/chat/completions     | `chat:create` | a chat completion, or `text/event-stream` chunks |
 * | GET  /api/v1/chat/requests        | `usage:read`  | `{ requests, nextCursor }`, newest first          |
 * | GET  /api/v1/chat/requests/{id}   | `usage:read`  | one request's metadata, usage and charge          |
 *
 * The completion request and response follow the common chat-completion format, so OpenAI
 * SDKs work against `<server>/api/v1` unchanged (see ChatWire). A stream sends `data: <chunk>`
 * events and ends with `data: [DONE]`; its last chunk before that has empty `choices`, `usage`
 * and `svc.charged_micros`. When the upstream breaks off, the stream ends instead with one
 * event `{ error: { code, message }, usage, svc }` (which the SDKs raise as an error).
 *
 * Errors have the spec's body `{ code, error }` (the server's global error middleware), with
 * Retry-After on 429. Routes only translate HTTP to ChatCompletions and ChatBilling calls.
 */
import { Effect, Stream } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { ChatBilling, ChatCompletions, ChatWire, Errors } from "@taskmeter/kernel"
import * as JsonBody from "../JsonBody.ts"
import { authenticate } from "./ChatAuth.ts"

export const DEFAULT_PAGE_SIZE = 100
export const MAX_PAGE_SIZE = 100

const encoder = new TextEncoder()
const DONE = encoder.encode("data: [DONE]\n\n")

/** Server-sent events of a chat stream, `[DONE]` after a complete one. */
export const eventStream = (events: Stream.Stream<ChatCompletions.StreamEvent>): Stream.Stream<Uint8Array> =>
  Stream.suspend(() => {
    let broken = false
    return events.pipe(
      Stream.map((event) => {
        if ("error" in event) broken = true
        return encoder.encode(`data: ${JSON.stringify(event)}\n\n`)
      }),
      Stream.concat(Stream.suspend(() => (broken ? Stream.empty : Stream.succeed(DONE))))
    )
  })

const pageSize = (text: string | undefined) => {
  if (text === undefined) return Effect.succeed(DEFAULT_PAGE_SIZE)
  const limit = /^\d{1,3}$/.test(text) ? Number(text) : Number.NaN
  return limit >= 1 && limit <= MAX_PAGE_SIZE
    ? Effect.succeed(limit)
    : Effect.fail(new Errors.InvalidRequest({ message: `Invalid query parameter limit: must be an integer from 1 to ${MAX_PAGE_SIZE}.` }))
}

const models = Effect.gen(function*() {
  const completions = yield* ChatCompletions.ChatCompletions
  return HttpServerResponse.jsonUnsafe(yield* completions.models)
})

const completions = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const caller = yield* authenticate(request, "chat:create")
  const body = yield* JsonBody.read(request)
  const created = yield* (yield* ChatCompletions.ChatCompletions).create(caller, body)
  if (created._tag === "Completion") return HttpServerResponse.jsonUnsafe(created.completion)
  return HttpServerResponse.stream(eventStream(created.events), {
    contentType: "text/event-stream",
    headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
  })
})

const list = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const caller = yield* authenticate(request, "usage:read")
  const query = new URL(request.url, "http://localhost").searchParams
  const limit = yield* pageSize(query.get("limit") ?? undefined)
  const before = query.get("before") ?? undefined
  const page = yield* (yield* ChatBilling.ChatBilling).list(caller, { limit, before })
  return HttpServerResponse.jsonUnsafe({ requests: page.requests.map(ChatWire.toView), nextCursor: page.nextCursor })
})

const get = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const caller = yield* authenticate(request, "usage:read")
  const { id } = yield* HttpRouter.params
  const record = yield* (yield* ChatBilling.ChatBilling).get(caller, id ?? "")
  return HttpServerResponse.jsonUnsafe(ChatWire.toView(record))
})

/** The chat routes on the HttpRouter in context. */
export const layer = HttpRouter.use((router) =>
  Effect.gen(function*() {
    yield* router.add("GET", "/api/v1/chat/models", models)
    yield* router.add("POST", "/api/v1/chat/completions", completions)
    yield* router.add("GET", "/api/v1/chat/requests", list)
    yield* router.add("GET", "/api/v1/chat/requests/:id", get)
  })
)
