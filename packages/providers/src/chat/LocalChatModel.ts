/**
 * The offline chat upstream (`provider: "local"`): a deterministic model needing no account, so a
 * fresh `npm start` offers chat. It answers by rule (a call of the offered tool when the user spoke
 * last, `The tool returned: ...` after a tool message, else `You said: ...`), cut at the completion
 * cap, streaming one token per chunk `tokenDelayMs` apart, and reports real usage counted with
 * o200k_base.
 */
import { createHash } from "node:crypto"
import { Effect, Stream } from "effect"
import { ChatTokens } from "@taskmeter/kernel"
import type { ChatProvider, TokenUsage } from "@taskmeter/kernel"

type Json = ChatProvider.Json
type JsonObject = ChatProvider.JsonObject

export interface Options {
  /** Pause before each streamed token; 0 streams as fast as the client reads. */
  readonly tokenDelayMs?: number | undefined
}

const TOKENIZER = "o200k_base"
const FRAMING = 3

const isObject = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

const textOf = (message: JsonObject): string => {
  const content = message.content
  if (typeof content === "string") return content
  if (Array.isArray(content)) {
    return content.flatMap((part) => (isObject(part) && typeof part.text === "string" ? [part.text] : [])).join("\n")
  }
  return ""
}

const messagesOf = (call: ChatProvider.ChatCall): ReadonlyArray<JsonObject> =>
  Array.isArray(call.body.messages) ? call.body.messages.filter(isObject) : []

const promptTokens = (call: ChatProvider.ChatCall): number =>
  messagesOf(call).reduce(
    (sum, message) =>
      sum + FRAMING + ChatTokens.countText(TOKENIZER, String(message.role)) + ChatTokens.countText(TOKENIZER, textOf(message)),
    FRAMING
  ) + (call.body.tools === undefined ? 0 : ChatTokens.countText(TOKENIZER, JSON.stringify(call.body.tools)))

const sampleValue = (schema: unknown, text: string): Json => {
  const type = isObject(schema) ? schema.type : undefined
  switch (type) {
    case "string":
      return text
    case "number":
    case "integer":
      return 0
    case "boolean":
      return false
    case "array":
      return []
    case "object":
      return {}
    default:
      return null
  }
}

type Answer =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "ToolCall"; readonly id: string; readonly name: string; readonly arguments: string }

const chooseTool = (call: ChatProvider.ChatCall): JsonObject | undefined => {
  const tools = Array.isArray(call.body.tools) ? call.body.tools.filter(isObject) : []
  const choice = call.body.tool_choice
  if (tools.length === 0 || choice === "none") return undefined
  const named = isObject(choice) && isObject(choice.function) ? choice.function.name : undefined
  const tool = tools.find((t) => isObject(t.function) && (named === undefined || t.function.name === named))
  return tool !== undefined && isObject(tool.function) ? tool.function : undefined
}

/** The deterministic answer to a conversation. */
export const answer = (call: ChatProvider.ChatCall): Answer => {
  const messages = messagesOf(call)
  const last = messages[messages.length - 1]
  if (last === undefined) return { _tag: "Text", text: "You said nothing." }
  if (last.role === "tool") return { _tag: "Text", text: `The tool returned: ${textOf(last)}` }
  const text = textOf(last)
  const tool = last.role === "user" ? chooseTool(call) : undefined
  if (tool !== undefined && typeof tool.name === "string") {
    const parameters = isObject(tool.parameters) ? tool.parameters : {}
    const properties = isObject(parameters.properties) ? parameters.properties : {}
    const required = Array.isArray(parameters.required)
      ? parameters.required.filter((name): name is string => typeof name === "string")
      : Object.keys(properties)
    const args = Object.fromEntries(required.map((name) => [name, sampleValue(properties[name], text)]))
    const id = `call_${createHash("sha256").update(JSON.stringify(messages)).digest("hex").slice(0, 24)}`
    return { _tag: "ToolCall", id, name: tool.name, arguments: JSON.stringify(args) }
  }
  return { _tag: "Text", text: `You said: ${text}` }
}

interface Rendered {
  readonly first: JsonObject
  readonly pieces: ReadonlyArray<JsonObject>
  readonly message: JsonObject
  readonly finishReason: string
  readonly usage: TokenUsage.TokenUsage
}

/** The answer as stream deltas and as a whole message, cut at the cap. */
const render = (call: ChatProvider.ChatCall): Rendered => {
  const reply = answer(call)
  const prompt = promptTokens(call)
  if (reply._tag === "Text") {
    const cut = ChatTokens.pieces(TOKENIZER, reply.text, call.maxTokens)
    return {
      first: { role: "assistant", content: "" },
      pieces: cut.pieces.map((content) => ({ content })),
      message: { role: "assistant", content: cut.pieces.join(""), refusal: null },
      finishReason: cut.truncated ? "length" : "stop",
      usage: { promptTokens: prompt, completionTokens: cut.tokens }
    }
  }
  const nameTokens = ChatTokens.countText(TOKENIZER, reply.name)
  const cut = ChatTokens.pieces(TOKENIZER, reply.arguments, Math.max(0, call.maxTokens - nameTokens))
  const args = cut.pieces.join("")
  return {
    first: {
      role: "assistant",
      content: null,
      tool_calls: [{ index: 0, id: reply.id, type: "function", function: { name: reply.name, arguments: "" } }]
    },
    pieces: cut.pieces.map((piece) => ({ tool_calls: [{ index: 0, function: { arguments: piece } }] })),
    message: {
      role: "assistant",
      content: null,
      refusal: null,
      tool_calls: [{ id: reply.id, type: "function", function: { name: reply.name, arguments: args } }]
    },
    finishReason: cut.truncated ? "length" : "tool_calls",
    usage: { promptTokens: prompt, completionTokens: Math.min(call.maxTokens, nameTokens + cut.tokens) }
  }
}

/** The offline model's provider name in the chat price list. */
export const PROVIDER = "local"

export const make = (options: Options = {}): ChatProvider.ChatProviderV1 => {
  const delay = options.tokenDelayMs ?? 0
  const pause = delay > 0 ? Effect.sleep(delay) : Effect.void
  return {
    specificationVersion: "v1",
    provider: PROVIDER,
    complete: (call) =>
      Effect.sync(() => {
        const rendered = render(call)
        return { message: rendered.message, finishReason: rendered.finishReason, usage: rendered.usage }
      }),
    stream: (call) =>
      Effect.sync(() => {
        const rendered = render(call)
        const deltas: Array<ChatProvider.ChatStreamPart> = [
          { _tag: "Delta", delta: rendered.first, finishReason: null },
          ...rendered.pieces.map((delta): ChatProvider.ChatStreamPart => ({ _tag: "Delta", delta, finishReason: null })),
          { _tag: "Delta", delta: {}, finishReason: rendered.finishReason },
          { _tag: "Usage", usage: rendered.usage }
        ]
        return Stream.fromIterable(deltas).pipe(Stream.tap(() => pause))
      })
  }
}
