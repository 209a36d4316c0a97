/**
 * The chat upstreams a deployment runs, from configuration (`scoped`): an OpenAI-compatible API
 * from `CHAT_UPSTREAM_BASE_URL`, `_API_KEY`, `_MODELS` (our id → the upstream's) and
 * `_CAP_PARAMETER`, serving the price list's `provider: "upstream"` models, and the offline `local`
 * model (`CHAT_LOCAL_ENABLED`, `CHAT_LOCAL_TOKEN_DELAY_MS`). With nothing set only the local model is
 * served. The settings: packages/http/README.md, Configuration.
 */
import { Config, Effect, Option, type Scope } from "effect"
import type { ChatProvider } from "@taskmeter/kernel"
import * as LocalChatModel from "./LocalChatModel.ts"
import * as OpenAiCompatible from "./OpenAiCompatible.ts"

/** The provider name of the configured OpenAI-compatible upstream. */
export const UPSTREAM = "upstream"

/** Parses `a=b,c=d` into a model map; blank entries are skipped. */
export const parseModels = (text: string): { readonly [chatModel: string]: string } =>
  Object.fromEntries(
    text
      .split(",")
      .map((pair) => pair.trim())
      .filter((pair) => pair.length > 0)
      .map((pair) => {
        const at = pair.indexOf("=")
        return at < 0 ? [pair, pair] : [pair.slice(0, at).trim(), pair.slice(at + 1).trim()]
      })
  )

const settings = Config.all({
  baseUrl: Config.option(Config.String("CHAT_UPSTREAM_BASE_URL")),
  apiKey: Config.option(Config.Redacted("CHAT_UPSTREAM_API_KEY")),
  models: Config.String("CHAT_UPSTREAM_MODELS").pipe(Config.withDefault("")),
  capParameter: Config.Literals(["max_tokens", "max_completion_tokens"], "CHAT_UPSTREAM_CAP_PARAMETER").pipe(
    Config.withDefault("max_tokens" as const)
  ),
  localEnabled: Config.Boolean("CHAT_LOCAL_ENABLED").pipe(Config.withDefault(true)),
  tokenDelayMs: Config.Int("CHAT_LOCAL_TOKEN_DELAY_MS").pipe(Config.withDefault(0))
})

type Settings = Config.Success<typeof settings>

const upstreamOptions = (config: Settings, baseUrl: string): OpenAiCompatible.Options => ({
  provider: UPSTREAM,
  baseUrl,
  apiKey: Option.getOrUndefined(config.apiKey),
  models: parseModels(config.models),
  capParameter: config.capParameter
})

const local = (config: Settings) => (config.localEnabled ? [LocalChatModel.make({ tokenDelayMs: config.tokenDelayMs })] : [])

/** The configured chat providers; the upstream's connections close with the scope (a layer's, when built in one). */
export const scoped: Effect.Effect<ReadonlyArray<ChatProvider.ChatProviderV1>, Config.ConfigError, Scope.Scope> = Effect.gen(
  function* () {
    const config = yield* settings
    const upstream = Option.isSome(config.baseUrl)
      ? [yield* OpenAiCompatible.scoped(upstreamOptions(config, config.baseUrl.value))]
      : []
    return [...upstream, ...local(config)]
  }
)
