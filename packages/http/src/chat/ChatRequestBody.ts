/**
 * Decodes the body of POST /api/v1/chat/completions (ChatWire.ChatCompletionRequest) into the
 * kernel's ChatRequest, before any reservation: INVALID_REQUEST names the first problem as
 * `<path>: <rule>` (e.g. `messages[0].role: must be one of ...`), then the first string a store
 * cannot hold (StorableText) in `model`, `messages` or a forwarded member. Members not in
 * ChatWire.FORWARDED are dropped; of two caps the smaller applies. A body of the common shape
 * (text messages, caps, sampling numbers) is recognised without the schema's walk, which accepts it
 * unchanged: the same request, at a fraction of the CPU.
 */
import { Result, Schema, SchemaIssue } from "effect"
import { type ChatCompletions, type ChatProvider, Errors, StorableText } from "@taskmeter/kernel"
import { ChatCompletionRequest, FORWARDED } from "../api/ChatWire.ts"

const decodeBody = Schema.decodeUnknownResult(ChatCompletionRequest)

type Plain = Record<string, unknown>

const isPlain = (value: unknown): value is Plain =>
  typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype

/** Roles whose text message the schema takes as it is (no tool_call_id needed). */
const TEXT_ROLES = new Set(["system", "developer", "user", "assistant"])

const isTextMessage = (message: unknown): boolean => {
  if (!isPlain(message)) return false
  for (const key in message) if (key !== "role" && key !== "content") return false
  return typeof message.content === "string" && TEXT_ROLES.has(message.role as string)
}

const isCap = (value: unknown): boolean =>
  value === undefined || value === null || (Number.isSafeInteger(value) && (value as number) >= 1)

const isSampling = (value: unknown): boolean => value === undefined || (typeof value === "number" && Number.isFinite(value))

const COMMON_KEYS = new Set(["model", "messages", "stream", "max_tokens", "max_completion_tokens", "temperature", "top_p"])

/** A body of the common shape, which the schema would accept as it is; false sends it through the schema. */
const isCommon = (body: unknown): body is ChatCompletionRequest => {
  if (!isPlain(body)) return false
  for (const key in body) if (!COMMON_KEYS.has(key)) return false
  const { model, messages, stream } = body
  return (
    typeof model === "string" &&
    model.length > 0 &&
    Array.isArray(messages) &&
    messages.length > 0 &&
    messages.every(isTextMessage) &&
    (stream === undefined || typeof stream === "boolean") &&
    isCap(body.max_tokens) &&
    isCap(body.max_completion_tokens) &&
    isSampling(body.temperature) &&
    isSampling(body.top_p)
  )
}

const formatIssue = SchemaIssue.makeFormatterStandardSchemaV1()

type Segment = PropertyKey | { readonly key: PropertyKey }

const formatPath = (path: ReadonlyArray<Segment>): string =>
  path
    .map((segment, i) => {
      const key = typeof segment === "object" ? segment.key : segment
      return typeof key === "number" ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`
    })
    .join("")

/** The first problem of a refused body, as `<path>: <rule>`. */
const problem = (issue: SchemaIssue.Issue): string => {
  const [first] = formatIssue(issue).issues
  if (first === undefined) return "The body is not a valid chat-completion request."
  const path = first.path ?? []
  return path.length === 0 ? first.message : `${formatPath(path)}: ${first.message}`
}

const toRequest = (request: ChatCompletionRequest): ChatCompletions.ChatRequest => {
  const caps = [request.max_tokens, request.max_completion_tokens].filter((cap) => typeof cap === "number")
  const forward: Record<string, ChatProvider.Json> = { messages: request.messages }
  for (const name of FORWARDED) {
    const value = request[name]
    if (value !== undefined) forward[name] = value
  }
  return {
    model: request.model,
    messages: request.messages,
    stream: request.stream === true,
    maxTokens: caps.length === 0 ? undefined : Math.min(...caps),
    forward
  }
}

/** The kernel's request from a parsed JSON body, or the INVALID_REQUEST naming its first problem. */
export const decode = (body: unknown): Result.Result<ChatCompletions.ChatRequest, Errors.InvalidRequest> =>
  Result.flatMap(
    isCommon(body)
      ? Result.succeed(toRequest(body))
      : Result.mapBoth(decodeBody(body), {
          onFailure: (error) => new Errors.InvalidRequest({ message: problem(error.issue) }),
          onSuccess: toRequest
        }),
    (request) => {
      const unstorable = StorableText.findUnstorable({ model: request.model, ...request.forward })
      return unstorable === undefined
        ? Result.succeed(request)
        : Result.fail(new Errors.InvalidRequest({ message: StorableText.describe(unstorable) }))
    }
  )

/** Whether a decoded body asks for the usage chunk (`stream_options.include_usage: true`). */
export const includeUsage = (body: unknown): boolean => {
  const options = (body as { readonly stream_options?: { readonly include_usage?: unknown } | null }).stream_options
  return options?.include_usage === true
}
