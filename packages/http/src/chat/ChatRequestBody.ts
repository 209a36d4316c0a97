/**
 * Decodes the body of POST /api/v1/chat/completions (ChatWire.ChatCompletionRequest) into the
 * kernel's ChatRequest, before any reservation: INVALID_REQUEST names the first problem as
 * `<path>: <rule>` (e.g. `messages[0].role: must be one of ...`), then the first string a store
 * cannot hold (StorableText) in `model`, `messages` or a forwarded member. Members not in
 * ChatWire.FORWARDED are dropped; of two caps the smaller applies.
 */
import { Result, Schema, SchemaIssue } from "effect"
import { type ChatCompletions, type ChatProvider, Errors, StorableText } from "@taskmeter/kernel"
import { ChatCompletionRequest, FORWARDED } from "../api/ChatWire.ts"

const decodeBody = Schema.decodeUnknownResult(ChatCompletionRequest)

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
    Result.mapBoth(decodeBody(body), {
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
