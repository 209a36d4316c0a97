/**
 * The wire format of the chat endpoints: the common chat-completion request as the service
 * accepts it, the completion object and stream chunks it answers with, and the customer view
 * of a chat request record. Clients can import it without any server code.
 *
 * Request rules (anything else is 400 INVALID_REQUEST, before any reservation):
 * - `model` (string) and `messages` (a non-empty array) are required. Each message is an object
 *   with a `role` of system, developer, user, assistant, tool or function; `content` a string,
 *   an array of typed parts, or null/absent (assistant messages only); a tool message needs
 *   `tool_call_id`. Messages are forwarded exactly as sent.
 * - `max_completion_tokens` (preferred) or `max_tokens`: a whole number of at least 1 and at
 *   most the model's context length. When both are given the smaller applies.
 * - `n`, when given, must be 1 (a reservation covers one choice).
 * - `stream` (boolean); `stream_options` is accepted and ignored: a streamed response always
 *   ends with a usage chunk.
 * - Forwarded to the upstream when given: `FORWARDED` below. Other members are dropped, so that
 *   a caller cannot switch on upstream features that would cost more than was reserved.
 *
 * The charge of a request is in `svc.charged_micros` (integer USD micro-units), on the
 * completion object, and on the final chunk of a stream together with `usage`.
 */
import { Result } from "effect"
import type { ChatRequestRecord, TokenUsage } from "./ChatBilling.ts"
import type { Json, JsonObject } from "./ChatProvider.ts"
import * as Errors from "./Errors.ts"

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

export interface ChatRequest {
  readonly model: string
  readonly messages: ReadonlyArray<JsonObject>
  readonly stream: boolean
  /** undefined when the caller gave no cap: the policy default applies. */
  readonly maxTokens: number | undefined
  /** `messages` and the FORWARDED members the caller gave. */
  readonly forward: JsonObject
}

const isObject = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

const isCap = (u: unknown): u is number => typeof u === "number" && Number.isSafeInteger(u) && u >= 1

const messageProblem = (message: unknown, at: string): string | undefined => {
  if (!isObject(message)) return `${at}: must be an object`
  const role = message.role
  if (typeof role !== "string" || !(ROLES as ReadonlyArray<string>).includes(role)) {
    return `${at}.role: must be one of ${ROLES.join(", ")}`
  }
  const content = message.content
  if (Array.isArray(content)) {
    const bad = content.findIndex((part) => !isObject(part) || typeof part.type !== "string")
    if (bad >= 0) return `${at}.content[${bad}]: must be an object with a string type`
  } else if (typeof content !== "string" && !(role === "assistant" && (content === null || content === undefined))) {
    return `${at}.content: must be a string or an array of content parts`
  }
  if (role === "tool" && typeof message.tool_call_id !== "string") return `${at}.tool_call_id: required for a tool message`
  if (message.tool_calls !== undefined && !Array.isArray(message.tool_calls)) return `${at}.tool_calls: must be an array`
  return undefined
}

const invalid = (message: string) => Result.fail(new Errors.InvalidRequest({ message }))

/** Checks a parsed JSON body against the rules above. */
export const decodeRequest = (body: unknown): Result.Result<ChatRequest, Errors.InvalidRequest> => {
  if (!isObject(body)) return invalid("The body must be a JSON object.")
  if (typeof body.model !== "string" || body.model.length === 0) return invalid("model: required (a chat model id).")
  const messages = body.messages
  if (!Array.isArray(messages) || messages.length === 0) return invalid("messages: required (a non-empty array).")
  for (let i = 0; i < messages.length; i++) {
    const problem = messageProblem(messages[i], `messages[${i}]`)
    if (problem !== undefined) return invalid(problem)
  }
  if (body.stream !== undefined && typeof body.stream !== "boolean") return invalid("stream: must be a boolean.")
  if (body.stream_options !== undefined && body.stream_options !== null && !isObject(body.stream_options)) {
    return invalid("stream_options: must be an object.")
  }
  for (const name of ["max_tokens", "max_completion_tokens"] as const) {
    const value = body[name]
    if (value !== undefined && value !== null && !isCap(value)) return invalid(`${name}: must be a whole number of at least 1.`)
  }
  if (body.n !== undefined && body.n !== null && body.n !== 1) return invalid("n: only 1 is supported.")
  if (body.tools !== undefined && !(Array.isArray(body.tools) && body.tools.every(isObject))) {
    return invalid("tools: must be an array of tool definitions.")
  }
  const caps = [body.max_tokens, body.max_completion_tokens].filter(isCap)
  const forward: Record<string, Json> = { messages }
  for (const name of FORWARDED) {
    const value = body[name]
    if (value !== undefined) forward[name] = value
  }
  return Result.succeed({
    model: body.model,
    messages: messages as ReadonlyArray<JsonObject>,
    stream: body.stream === true,
    maxTokens: caps.length === 0 ? undefined : Math.min(...caps),
    forward
  })
}

export interface WireUsage {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
}

export const wireUsage = (usage: TokenUsage): WireUsage => ({
  prompt_tokens: usage.promptTokens,
  completion_tokens: usage.completionTokens,
  total_tokens: usage.promptTokens + usage.completionTokens
})

export interface Svc {
  readonly charged_micros: number
}

export interface ChatCompletion {
  readonly id: string
  readonly object: "chat.completion"
  readonly created: number
  readonly model: string
  readonly choices: ReadonlyArray<{
    readonly index: 0
    readonly message: JsonObject
    readonly finish_reason: string | null
    readonly logprobs: Json
  }>
  readonly usage: WireUsage
  readonly svc: Svc
}

export interface ChatCompletionChunk {
  readonly id: string
  readonly object: "chat.completion.chunk"
  readonly created: number
  readonly model: string
  readonly choices: ReadonlyArray<{
    readonly index: 0
    readonly delta: JsonObject
    readonly finish_reason: string | null
    readonly logprobs?: Json | undefined
  }>
  /** On the final chunk only (whose choices are empty), with `svc`. */
  readonly usage?: WireUsage | undefined
  readonly svc?: Svc | undefined
}

/**
 * The last event of a stream that could not finish (the upstream broke off, or the store could
 * not record the end): `error` is what clients raise; `usage` and `svc` say what was charged
 * for the part that was delivered.
 */
export interface ChatStreamError {
  readonly error: { readonly code: string; readonly message: string; readonly type: "upstream_error" | "api_error" }
  readonly usage: WireUsage | null
  readonly svc: Svc
}

/** A chat request as GET /api/v1/chat/requests shows it: metadata, usage and charge, never text. */
export interface ChatRequestView {
  readonly id: string
  readonly model: string
  readonly status: ChatRequestRecord["status"]
  readonly reservedMicros: number
  readonly chargedMicros: number | null
  readonly currency: "USD"
  readonly usage: WireUsage | null
  readonly finishReason: string | null
  readonly errorCode: string | null
  readonly createdAt: string
  readonly completedAt: string | null
}

export const toView = (record: ChatRequestRecord): ChatRequestView => ({
  id: record.id,
  model: record.model,
  status: record.status,
  reservedMicros: record.reservedMicros,
  chargedMicros: record.chargedMicros,
  currency: "USD",
  usage: record.usage === null ? null : wireUsage(record.usage),
  finishReason: record.finishReason,
  errorCode: record.errorCode,
  createdAt: record.createdAt.toISOString(),
  completedAt: record.completedAt === null ? null : record.completedAt.toISOString()
})
