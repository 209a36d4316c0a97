/**
 * The kernel's chat services wired over the ChatStore for ChatServer's routes: ChatCompletions over
 * ChatBilling on credit leases (ChatLeases), the chat price list (versioned in the ChatPriceStore,
 * CHAT_PRICES_FILE or the shipped list seeding its first version) and the upstreams. `layerConfig`
 * reads the deployment's settings (CHAT_PRICES_FILE, CHAT_REQUESTS_PER_MINUTE, CHAT_MAX_OPEN_REQUESTS,
 * CHAT_LEASE_TTL_SECONDS, CHAT_UPSTREAM_*, CHAT_LOCAL_*;
 * see packages/http/README.md) and, once built, releases what a dead process left open
 * (ChatBilling.sweepAtStart) and loads the tokenizers of the models its upstreams serve
 * (`warmTokenizers`), so that no chat request pays for loading them.
 */
import { Clock, Config, Effect, Layer, Option, Schema } from "effect"
import { ChatBilling, ChatCompletions, ChatLeases, ChatPrices, ChatProvider, ChatTokens } from "@taskmeter/kernel"
import { ChatUpstreams, LocalChatModel } from "@taskmeter/providers"

export interface Options {
  readonly providers: ReadonlyArray<ChatProvider.ChatProviderV1>
  readonly limits?: ChatBilling.Limits | undefined
  /** How long a credit lease outlives its process; default ChatLeases.defaults.ttlMs. */
  readonly leaseTtlMs?: number | undefined
  /** How long an idle credit lease is kept; default ChatLeases.defaults.idleMs. */
  readonly leaseIdleMs?: number | undefined
  /** The chat price list saved as version 1 when the store holds none; the shipped defaults when omitted. */
  readonly pricesFile?: string | undefined
  /** A chat price list as data, kept in this process instead of the store. */
  readonly priceList?: unknown
}

/** ChatCompletions, ChatBilling, ChatPrices and ChatProviders over a ChatStore and ChatPriceStore. */
export const layer = (options: Options) =>
  ChatCompletions.layer.pipe(
    Layer.provideMerge(ChatLeases.layer({ limits: options.limits, ttlMs: options.leaseTtlMs, idleMs: options.leaseIdleMs })),
    Layer.provideMerge(
      Layer.merge(
        options.priceList !== undefined
          ? ChatPrices.layer(options.priceList)
          : ChatPrices.layerStore({
              seed:
                options.pricesFile === undefined
                  ? Effect.succeed(ChatPrices.defaultList)
                  : ChatPrices.readList(options.pricesFile)
            }),
        ChatProvider.layer(options.providers)
      )
    )
  )

const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

export const config = Config.all({
  pricesFile: Config.option(Config.String("CHAT_PRICES_FILE")),
  requestsPerMinute: Config.schema(PositiveInt, "CHAT_REQUESTS_PER_MINUTE").pipe(
    Config.withDefault(ChatBilling.defaultLimits.requestsPerMinute)
  ),
  maxOpenRequests: Config.schema(PositiveInt, "CHAT_MAX_OPEN_REQUESTS").pipe(
    Config.withDefault(ChatBilling.defaultLimits.maxOpenRequests)
  ),
  leaseTtlSeconds: Config.schema(PositiveInt, "CHAT_LEASE_TTL_SECONDS").pipe(Config.withDefault(ChatLeases.defaults.ttlMs / 1000))
})

/**
 * Loads the BPE tokenizers of the listed models that `providers` serve, except the offline model's
 * (it loads its own on first use), logging each load and how long it took.
 */
export const warmTokenizers = (providers: ReadonlyArray<ChatProvider.ChatProviderV1>) =>
  Effect.gen(function* () {
    const list = yield* (yield* ChatPrices.ChatPrices).current
    const upstreams = new Map(providers.map((provider) => [provider.provider, provider]))
    upstreams.delete(LocalChatModel.PROVIDER)
    const tokenizers = new Set<ChatPrices.Tokenizer>()
    for (const [model, entry] of Object.entries(list.models)) {
      const provider = upstreams.get(entry.provider)
      if (provider !== undefined && (provider.serves?.(model) ?? true)) {
        tokenizers.add(entry.tokenizer ?? ChatTokens.tokenizerFor(model))
      }
    }
    for (const tokenizer of tokenizers) {
      const startedMs = yield* Clock.currentTimeMillis
      if (ChatTokens.preload(tokenizer)) {
        yield* Effect.logInfo(`Loaded the ${tokenizer} tokenizer for chat in ${(yield* Clock.currentTimeMillis) - startedMs} ms`)
      }
    }
  })

/** `layer` from configuration, sweeping stale chat reservations and warming tokenizers once it is built. */
export const layerConfig = Layer.unwrap(
  Effect.gen(function* () {
    const settings = yield* config
    // Their connections close with this layer.
    const providers = yield* ChatUpstreams.scoped
    const services = layer({
      providers,
      pricesFile: Option.getOrUndefined(settings.pricesFile),
      limits: { requestsPerMinute: settings.requestsPerMinute, maxOpenRequests: settings.maxOpenRequests },
      leaseTtlMs: settings.leaseTtlSeconds * 1000
    })
    const sweep = Layer.effectDiscard(
      Effect.gen(function* () {
        const swept = yield* ChatBilling.sweepAtStart()
        if (swept > 0) yield* Effect.logInfo(`Released the reservations of ${swept} abandoned chat requests`)
      })
    )
    return Layer.provideMerge(Layer.merge(sweep, Layer.effectDiscard(warmTokenizers(providers))), services)
  })
)
