/**
 * Token counting for chat billing by model family (`tokenizerFor` maps a model id to one): OpenAI's
 * BPE encodings exactly (`gpt-tokenizer`: o200k_base, or cl100k_base for older models); the
 * families without a tokenizer here (Anthropic, Llama, Mistral, Gemini) estimated from the text,
 * CHARS_PER_TOKEN ASCII characters per token and a token for every other UTF-16 unit.
 * `estimatePrompt` sizes a reservation before the upstream call and errs high (and is charged for
 * the prompt when an upstream reports no usage); `countCompletion` counts what was delivered:
 * text, refusals, reasoning and tool calls. Settlement is on the usage the upstream reports. How
 * it errs high: docs/decisions.md, Chat.
 */
import { createRequire } from "node:module"
import type * as O200k from "gpt-tokenizer/encoding/o200k_base"
import type { Encoding, Tokenizer } from "./ChatPrices.ts"

export const MESSAGE_OVERHEAD = 4
export const PART_OVERHEAD = 1
export const REPLY_PRIMING = 3
export const TOOL_CALL_OVERHEAD = 3
export const IMAGE_TOKENS = 2_000

const plainText = { disallowedSpecial: new Set<string>() }

type Encoder = Pick<typeof O200k, "countTokens" | "encode" | "decodeGenerator">

const require = createRequire(import.meta.url)
const loaded: Partial<Record<Encoding, Encoder>> = {}

// Each encoding is loaded (synchronously) on its first use: loading both took half the kernel's
// import time in every process, most of which count no tokens.
const encoderOf = (encoding: Encoding): Encoder => (loaded[encoding] ??= require(`gpt-tokenizer/encoding/${encoding}`) as Encoder)

/**
 * Loads a BPE tokenizer's tables now rather than at its first count (the estimated families have
 * none); true when this call loaded them. Loading blocks the event loop for about half a second.
 */
export const preload = (tokenizer: Tokenizer): boolean => {
  if (tokenizer !== "o200k_base" && tokenizer !== "cl100k_base") return false
  if (loaded[tokenizer] !== undefined) return false
  encoderOf(tokenizer)
  return true
}

/**
 * ASCII characters per token for the families estimated from characters, below what their
 * tokenizers average on English prose and code, so that the estimate errs high.
 */
export const CHARS_PER_TOKEN: Readonly<Record<Exclude<Tokenizer, Encoding>, number>> = {
  anthropic: 2.5,
  llama: 3,
  mistral: 2.5,
  gemini: 3
}

const estimateText = (charsPerToken: number, text: string): number => {
  let ascii = 0
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) < 0x80) ascii++
  return Math.ceil(ascii / charsPerToken) + (text.length - ascii)
}

/** Tokens of one text, special-token look-alikes counted as ordinary text. */
export const countText = (tokenizer: Tokenizer, text: string): number => {
  if (text.length === 0) return 0
  switch (tokenizer) {
    case "o200k_base":
    case "cl100k_base":
      return encoderOf(tokenizer).countTokens(text, plainText)
    default:
      return estimateText(CHARS_PER_TOKEN[tokenizer], text)
  }
}

/** Model ids by family, first match wins; a vendor prefix (`anthropic/`, `us.anthropic.`) is allowed. */
const FAMILIES: ReadonlyArray<readonly [RegExp, Tokenizer]> = [
  [/(^|[/.])(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o1|o3|o4)\b/i, "o200k_base"],
  [/(^|[/.])(gpt-4|gpt-3\.5|text-embedding)/i, "cl100k_base"],
  [/claude/i, "anthropic"],
  [/llama/i, "llama"],
  [/mistral|mixtral|codestral|ministral|magistral|pixtral|devstral/i, "mistral"],
  [/gemini|gemma/i, "gemini"]
]

/** How a model's tokens are counted when its price entry names no tokenizer: by its id's family, else o200k_base. */
export const tokenizerFor = (model: string): Tokenizer => FAMILIES.find(([pattern]) => pattern.test(model))?.[1] ?? "o200k_base"

/** A string counts as its text, anything else as its JSON text; absent counts nothing. */
const countJson = (tokenizer: Tokenizer, value: unknown): number =>
  value === undefined ? 0 : countText(tokenizer, typeof value === "string" ? value : JSON.stringify(value))

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const countPart = (tokenizer: Tokenizer, part: unknown): number => {
  if (!isRecord(part)) return countJson(tokenizer, part)
  switch (part.type) {
    case "text":
      return countJson(tokenizer, part.text)
    case "refusal":
      return countJson(tokenizer, part.refusal)
    case "image_url":
      return IMAGE_TOKENS
    default:
      return countJson(tokenizer, part)
  }
}

const countToolCalls = (tokenizer: Tokenizer, calls: unknown): number =>
  Array.isArray(calls)
    ? calls.reduce((sum: number, call) => {
        if (!isRecord(call)) return sum + countJson(tokenizer, call)
        const fn = isRecord(call.function) ? call.function : {}
        return (
          sum +
          TOOL_CALL_OVERHEAD +
          countJson(tokenizer, call.id) +
          countJson(tokenizer, fn.name) +
          countJson(tokenizer, fn.arguments)
        )
      }, 0)
    : countJson(tokenizer, calls)

const countMessage = (tokenizer: Tokenizer, message: unknown): number => {
  if (!isRecord(message)) return MESSAGE_OVERHEAD + countJson(tokenizer, message)
  const content = message.content
  const contentTokens = Array.isArray(content)
    ? content.reduce((sum: number, part) => sum + PART_OVERHEAD + countPart(tokenizer, part), 0)
    : typeof content === "string"
      ? countText(tokenizer, content)
      : 0
  return (
    MESSAGE_OVERHEAD +
    countJson(tokenizer, message.role) +
    contentTokens +
    countJson(tokenizer, message.name) +
    countJson(tokenizer, message.tool_call_id) +
    countToolCalls(tokenizer, message.tool_calls) +
    countJson(tokenizer, message.function_call) +
    countJson(tokenizer, message.refusal)
  )
}

/**
 * A high estimate of the prompt tokens an upstream will bill for these messages, with
 * `definitions` (tools, functions, tool_choice, response_format: whatever the upstream adds
 * to the prompt) counted as their JSON text.
 */
export const estimatePrompt = (
  tokenizer: Tokenizer,
  messages: ReadonlyArray<unknown>,
  definitions: ReadonlyArray<unknown> = []
): number =>
  messages.reduce((sum: number, message) => sum + countMessage(tokenizer, message), 0) +
  REPLY_PRIMING +
  definitions.reduce((sum: number, definition) => sum + countJson(tokenizer, definition), 0)

/** What a completion delivered, piece by piece, for counting when the upstream reports no usage. */
export interface Delivered {
  readonly text: string
  readonly toolCalls: ReadonlyArray<{ readonly name: string; readonly arguments: string }>
}

export const countCompletion = (tokenizer: Tokenizer, delivered: Delivered): number =>
  countText(tokenizer, delivered.text) +
  delivered.toolCalls.reduce(
    (sum, call) => sum + TOOL_CALL_OVERHEAD + countText(tokenizer, call.name) + countText(tokenizer, call.arguments),
    0
  )

export interface Pieces {
  /** The text at token boundaries: one piece per token (a character split across tokens joins them). */
  readonly pieces: ReadonlyArray<string>
  readonly tokens: number
  /** True when the text had more than `limit` tokens and was cut. */
  readonly truncated: boolean
}

/** Splits a text into its tokens' pieces, keeping at most `limit` tokens (for streaming a text token by token). */
export const pieces = (encoding: Encoding, text: string, limit: number = Number.POSITIVE_INFINITY): Pieces => {
  const encoder = encoderOf(encoding)
  const tokens = encoder.encode(text, plainText)
  const kept = tokens.length > limit ? tokens.slice(0, limit) : tokens
  return { pieces: [...encoder.decodeGenerator(kept)], tokens: kept.length, truncated: kept.length < tokens.length }
}
