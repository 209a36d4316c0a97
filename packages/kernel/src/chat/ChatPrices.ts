/**
 * The operator's chat price list (`prices/default-chat-prices.json`, checked whole at load): per
 * chat model its `provider` (the configured upstream serving it; `local` is the offline model),
 * `contextLength`, `tokenizer` (default `o200k_base`) and `tiers` of micro-USD per million prompt
 * and completion tokens by prompt size, never falling from one tier to the next. `costUpTo` rounds
 * once, up, in BigInt. The rules: docs/decisions.md, Chat.
 */
import { readFile } from "node:fs/promises"
import { Context, Effect, Layer, Result, Schema } from "effect"
import defaultChatPrices from "../../prices/default-chat-prices.json" with { type: "json" }
import type { TokenUsage } from "./TokenUsage.ts"
import { decodeAll } from "../domain/internal/SchemaProblems.ts"
import { Micros, micros } from "../domain/Money.ts"

export const Tokenizer = Schema.Literals(["o200k_base", "cl100k_base"]).annotate({
  description: "The BPE encoding used to count the model's tokens."
})
export type Tokenizer = typeof Tokenizer.Type

const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1), Schema.isLessThanOrEqualTo(Number.MAX_SAFE_INTEGER))

export const ChatPriceTier = Schema.Struct({
  upToPromptTokens: Schema.NullOr(PositiveInt).annotate({
    description: "The largest prompt (in tokens) this tier applies to; null for the last, open-ended tier."
  }),
  promptMicrosPerMillion: Micros,
  completionMicrosPerMillion: Micros
}).annotate({ identifier: "ChatPriceTier" })
export type ChatPriceTier = typeof ChatPriceTier.Type

export const ChatModelPrice = Schema.Struct({
  enabled: Schema.Boolean,
  provider: Schema.NonEmptyString,
  contextLength: PositiveInt,
  tokenizer: Schema.optionalKey(Tokenizer),
  /** Unix seconds, shown as `created` in the model list (0 when not given). */
  created: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
  tiers: Schema.optionalKey(Schema.Array(ChatPriceTier).check(Schema.isMinLength(1)))
}).annotate({ identifier: "ChatModelPrice" })
export type ChatModelPrice = typeof ChatModelPrice.Type

export const ChatPriceList = Schema.Struct({
  models: Schema.Record(Schema.String, ChatModelPrice)
}).annotate({ identifier: "ChatPriceList" })
export type ChatPriceList = typeof ChatPriceList.Type

/** A chat price list that cannot be used, with every problem found, each prefixed by where it is. */
export class ChatPriceListInvalid extends Schema.TaggedError<ChatPriceListInvalid>()("ChatPriceListInvalid", {
  problems: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `The chat price list is invalid:\n- ${this.problems.join("\n- ")}`
  }
}

const MILLION = 1_000_000n

/** The one tier whose range holds a prompt of this size. */
export const tierFor = (tiers: ReadonlyArray<ChatPriceTier>, promptTokens: number): ChatPriceTier =>
  tiers.find((tier) => tier.upToPromptTokens === null || promptTokens <= tier.upToPromptTokens) ?? tiers[tiers.length - 1]!

const exactCost = (tiers: ReadonlyArray<ChatPriceTier>, usage: TokenUsage): bigint => {
  const tier = tierFor(tiers, usage.promptTokens)
  const total =
    BigInt(usage.promptTokens) * BigInt(tier.promptMicrosPerMillion) +
    BigInt(usage.completionTokens) * BigInt(tier.completionMicrosPerMillion)
  return (total + MILLION - 1n) / MILLION
}

/** The cost of a token count, rounded once, up, to a whole micro-unit. Throws past the safe-integer range. */
export const cost = (tiers: ReadonlyArray<ChatPriceTier>, usage: TokenUsage): Micros => micros(Number(exactCost(tiers, usage)))

/** The cost of a token count, but never more than `cap` (however large the counts an upstream reports). */
export const costUpTo = (tiers: ReadonlyArray<ChatPriceTier>, usage: TokenUsage, cap: Micros): Micros => {
  const exact = exactCost(tiers, usage)
  return exact < BigInt(cap) ? micros(Number(exact)) : cap
}

const modelProblems = (id: string, entry: ChatModelPrice): ReadonlyArray<string> => {
  const at = `models.${id}.tiers`
  const tiers = entry.tiers ?? []
  const found: Array<string> = []
  tiers.forEach((tier, i) => {
    const last = i === tiers.length - 1
    if (last && tier.upToPromptTokens !== null)
      found.push(`${at}[${i}].upToPromptTokens: the last tier must be null (open-ended)`)
    if (!last && tier.upToPromptTokens === null) found.push(`${at}[${i}].upToPromptTokens: only the last tier may be null`)
    const previous = tiers[i - 1]
    if (previous === undefined) return
    if (
      tier.upToPromptTokens !== null &&
      previous.upToPromptTokens !== null &&
      tier.upToPromptTokens <= previous.upToPromptTokens
    ) {
      found.push(`${at}[${i}].upToPromptTokens: must be greater than the previous tier's`)
    }
    if (
      tier.promptMicrosPerMillion < previous.promptMicrosPerMillion ||
      tier.completionMicrosPerMillion < previous.completionMicrosPerMillion
    ) {
      found.push(`${at}[${i}]: rates may not be lower than the previous tier's (a larger prompt never costs less)`)
    }
  })
  const worst =
    tiers.reduce((sum, tier) => sum + BigInt(tier.promptMicrosPerMillion) + BigInt(tier.completionMicrosPerMillion), 0n) *
    BigInt(entry.contextLength)
  if (worst / MILLION >= BigInt(Number.MAX_SAFE_INTEGER)) {
    found.push(`${at}: a request as long as the context would cost more than the largest safe amount`)
  }
  return found
}

/** Every way a decoded chat price list is unusable; empty when it is usable. */
export const problems = (list: ChatPriceList): ReadonlyArray<string> =>
  Object.entries(list.models).flatMap(([id, entry]) => modelProblems(id, entry))

const decodeList = decodeAll(ChatPriceList, "chat price list")

/** Decodes raw JSON data into a chat price list, every problem reported at once. */
export const decode = (raw: unknown): Result.Result<ChatPriceList, ChatPriceListInvalid> =>
  Result.flatMap(
    Result.mapError(decodeList(raw), (problems) => new ChatPriceListInvalid({ problems })),
    (list) => {
      const found = problems(list)
      return found.length === 0 ? Result.succeed(list) : Result.fail(new ChatPriceListInvalid({ problems: found }))
    }
  )

/** Whether a listed model can be priced now: enabled and with tiers. */
export const isPriced = (entry: ChatModelPrice): entry is ChatModelPrice & { readonly tiers: ReadonlyArray<ChatPriceTier> } =>
  entry.enabled && entry.tiers !== undefined

export class ChatPrices extends Context.Service<
  ChatPrices,
  {
    /** The list in force. */
    readonly current: Effect.Effect<ChatPriceList>
    /** The entry of one model; undefined when the list does not name it. */
    readonly lookup: (model: string) => Effect.Effect<ChatModelPrice | undefined>
  }
>()("@taskmeter/kernel/ChatPrices") {}

/** ChatPrices over raw price-list data, checked first. */
export const make = (raw: unknown): Effect.Effect<ChatPrices["Service"], ChatPriceListInvalid> =>
  Effect.map(Effect.fromResult(decode(raw)), (list) =>
    ChatPrices.of({
      current: Effect.succeed(list),
      lookup: (model) => Effect.succeed(Object.hasOwn(list.models, model) ? list.models[model] : undefined)
    })
  )

export const layer = (raw: unknown): Layer.Layer<ChatPrices, ChatPriceListInvalid> => Layer.effect(ChatPrices, make(raw))

/** ChatPrices read from a JSON file at start. */
export const layerFromFile = (path: string): Layer.Layer<ChatPrices, ChatPriceListInvalid> =>
  Layer.unwrap(
    Effect.tryPromise({
      try: async () => JSON.parse(await readFile(path, "utf8")) as unknown,
      catch: (cause) => new ChatPriceListInvalid({ problems: [`${path}: cannot be read as JSON: ${String(cause)}`] })
    }).pipe(Effect.map(layer))
  )

/** The shipped defaults (prices/default-chat-prices.json). */
export const layerDefault: Layer.Layer<ChatPrices, ChatPriceListInvalid> = layer(defaultChatPrices)
