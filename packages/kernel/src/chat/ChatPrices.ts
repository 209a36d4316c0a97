/**
 * The operator's chat price list (`prices/default-chat-prices.json`, checked whole at load): per
 * chat model its `provider` (the configured upstream serving it; `local` is the offline model),
 * `contextLength`, `tokenizer` (default by model id, ChatTokens.tokenizerFor) and `tiers` of micro-USD per million prompt
 * and completion tokens by prompt size, never falling from one tier to the next. `costUpTo` rounds
 * once, up, in BigInt; `costBeyond` is what a usage costs past the reservation (the shortfall). `layerStore` keeps the list versioned in the ChatPriceStore and follows
 * changes made by any process. The rules: docs/decisions.md, Chat.
 */
import { readFile } from "node:fs/promises"
import { Context, Duration, Effect, Layer, Ref, Result, Schema } from "effect"
import type { Scope } from "effect"
import defaultChatPrices from "../../prices/default-chat-prices.json" with { type: "json" }
import { ChatPriceStore } from "./ChatPriceStore.ts"
import * as FollowedList from "../pricing/FollowedList.ts"
import type { PriceListConflict } from "../pricing/PriceStore.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import type { TokenUsage } from "./TokenUsage.ts"
import { decodeAll } from "../domain/internal/SchemaProblems.ts"
import { Micros, micros } from "../domain/Money.ts"

export const Tokenizer = Schema.Literals(["o200k_base", "cl100k_base", "anthropic", "llama", "mistral", "gemini"]).annotate({
  description:
    "How the model's tokens are counted: exactly with a BPE encoding (o200k_base, cl100k_base), or estimated from " +
    "the text's characters for a family without a tokenizer here (anthropic, llama, mistral, gemini). Default: from the " +
    "model id (claude-* is anthropic, llama-* llama...), else o200k_base."
})
export type Tokenizer = typeof Tokenizer.Type

/** The BPE encodings counted exactly (gpt-tokenizer); the other tokenizers are estimates. */
export type Encoding = Extract<Tokenizer, "o200k_base" | "cl100k_base">

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
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER)

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

/** What a token count costs beyond `cap`, rounded up: 0 when it fits (at most the largest safe amount). */
export const costBeyond = (tiers: ReadonlyArray<ChatPriceTier>, usage: TokenUsage, cap: Micros): Micros => {
  const beyond = exactCost(tiers, usage) - BigInt(cap)
  return beyond <= 0n ? micros(0) : micros(Number(beyond < MAX_SAFE ? beyond : MAX_SAFE))
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

/** Why a change of the list was not made: an invalid result, other processes' saves in a row, no store. */
export type ChangeError = ChatPriceListInvalid | PriceListConflict | StoreUnavailable

export class ChatPrices extends Context.Service<
  ChatPrices,
  {
    /** The list in force. */
    readonly current: Effect.Effect<ChatPriceList>
    /** The entry of one model; undefined when the list does not name it. */
    readonly lookup: (model: string) => Effect.Effect<ChatModelPrice | undefined>
    /** Replaces one model's entry (undefined: left as it is) with what `next` makes of it; answers the new entry. */
    readonly updateModel: (
      model: string,
      next: (current: ChatModelPrice | undefined) => ChatModelPrice | undefined
    ) => Effect.Effect<ChatModelPrice | undefined, ChangeError>
  }
>()("@taskmeter/kernel/ChatPrices") {}

const entryOf = (list: ChatPriceList, model: string) => (Object.hasOwn(list.models, model) ? list.models[model] : undefined)

const withEntry = (list: ChatPriceList, model: string, entry: ChatModelPrice | undefined): ChatPriceList =>
  entry === undefined ? list : { models: { ...list.models, [model]: entry } }

/** ChatPrices over raw price-list data, checked first; changes are kept in this process only. */
export const make = (raw: unknown): Effect.Effect<ChatPrices["Service"], ChatPriceListInvalid> =>
  Effect.gen(function* () {
    const ref = yield* Ref.make(yield* Effect.fromResult(decode(raw)))
    return ChatPrices.of({
      current: Ref.get(ref),
      lookup: (model) => Effect.map(Ref.get(ref), (list) => entryOf(list, model)),
      updateModel: (model, next) =>
        Effect.gen(function* () {
          const list = yield* Ref.get(ref)
          const changed = yield* Effect.fromResult(decode(withEntry(list, model, next(entryOf(list, model)))))
          yield* Ref.set(ref, changed)
          return entryOf(changed, model)
        })
    })
  })

export interface StoreOptions {
  /** The list saved as version 1 when the store holds none (read only then), checked like any other. */
  readonly seed: Effect.Effect<unknown, ChatPriceListInvalid>
  /** How often the store's version is compared, besides the notifications. Default 5 s. */
  readonly pollIntervalMs?: number | undefined
}

/** A change meeting this many saves of other processes in a row gives up with PriceListConflict. */
const CHANGE_ATTEMPTS = 5

const inVersion = (version: number) => (error: ChatPriceListInvalid) =>
  new ChatPriceListInvalid({ problems: error.problems.map((problem) => `version ${version} in the store: ${problem}`) })

/**
 * ChatPrices over the ChatPriceStore: prices from this process's copy of the current version,
 * changes saved as compare-and-set versions (redone on a conflict, a few times), other processes'
 * saves followed by notification or every `pollIntervalMs`, an empty store seeded as version 1. A
 * stored version this release cannot read is logged and skipped, the prices staying as they were.
 */
export const makeStored = (
  options: StoreOptions
): Effect.Effect<ChatPrices["Service"], ChatPriceListInvalid | StoreUnavailable, ChatPriceStore | Scope.Scope> =>
  Effect.gen(function* () {
    const store = yield* ChatPriceStore
    // Before the first read, so that no save after it goes unheard.
    const saved = yield* store.subscribe
    const first =
      (yield* store.current) ??
      (yield* Effect.gen(function* () {
        const list = yield* Effect.fromResult(decode(yield* options.seed))
        return yield* store.save(undefined, list).pipe(
          Effect.map(({ version }) => ({ version, list: list as unknown })),
          Effect.catchTag("PriceListConflict", () =>
            Effect.flatMap(store.current, (stored) =>
              stored === undefined
                ? Effect.die(new Error("ChatPriceStore refused a first save yet holds no list"))
                : Effect.succeed(stored)
            )
          )
        )
      }))
    const { adopt, current } = yield* FollowedList.follow({
      store,
      saved,
      first: {
        version: first.version,
        list: yield* Effect.mapError(Effect.fromResult(decode(first.list)), inVersion(first.version))
      },
      load: (stored) => Effect.fromResult(decode(stored.list)),
      pollInterval: Duration.millis(options.pollIntervalMs ?? 5_000),
      unusable: (version, kept) => `Chat price list version ${version} cannot be used; prices stay on version ${kept}`,
      unreachable: "Could not follow the stored chat price list"
    })

    const attempt = (model: string, next: (current: ChatModelPrice | undefined) => ChatModelPrice | undefined) =>
      Effect.gen(function* () {
        const stored = yield* store.current
        const base =
          stored === undefined
            ? { models: {} }
            : yield* Effect.mapError(Effect.fromResult(decode(stored.list)), inVersion(stored.version))
        const list = yield* Effect.fromResult(decode(withEntry(base, model, next(entryOf(base, model)))))
        const { version } = yield* store.save(stored?.version, list)
        yield* adopt(version, list)
        return entryOf(list, model)
      })
    return ChatPrices.of({
      current,
      lookup: (model) => Effect.map(current, (list) => entryOf(list, model)),
      updateModel: (model, next) =>
        Effect.retry(attempt(model, next), { while: (error) => error._tag === "PriceListConflict", times: CHANGE_ATTEMPTS - 1 })
    })
  })

export const layer = (raw: unknown): Layer.Layer<ChatPrices, ChatPriceListInvalid> => Layer.effect(ChatPrices, make(raw))

/** Raw chat price-list data read from a JSON file; ChatPriceListInvalid when it cannot be read or parsed. */
export const readList = (path: string): Effect.Effect<unknown, ChatPriceListInvalid> =>
  Effect.tryPromise({
    try: async () => JSON.parse(await readFile(path, "utf8")) as unknown,
    catch: (cause) => new ChatPriceListInvalid({ problems: [`${path}: cannot be read as JSON: ${String(cause)}`] })
  })

/** The shipped defaults (prices/default-chat-prices.json), as raw data. */
export const defaultList: unknown = defaultChatPrices

/** ChatPrices over the ChatPriceStore (see `makeStored`): a change made through one process is priced by all. */
export const layerStore = (
  options: StoreOptions
): Layer.Layer<ChatPrices, ChatPriceListInvalid | StoreUnavailable, ChatPriceStore> =>
  Layer.effect(ChatPrices, makeStored(options))
