/**
 * The chat upstreams a deployment runs, from configuration (`scoped`): OpenAI-compatible APIs, the
 * default one from `CHAT_UPSTREAM_BASE_URL`, `_API_KEY`, `_MODELS` (our id → the upstream's),
 * `_CAP_PARAMETER` and `_COST_PROMPT_MICROS_PER_MILLION` / `_COST_COMPLETION_MICROS_PER_MILLION`, named ones from `CHAT_UPSTREAMS` (JSON); routes from `CHAT_ROUTES` (a route is
 * what the price list's `provider` names: its upstreams in fallback order, ChatRoute; an
 * upstream's optional cost per token, default or named, is recorded with the requests it serves); and the
 * offline `local` model (`CHAT_LOCAL_ENABLED`, `CHAT_LOCAL_TOKEN_DELAY_MS`). With nothing set only
 * the local model is served. The settings: packages/http/README.md, Configuration.
 */
import { Config, ConfigProvider, Effect, Option, Redacted, Schema, type Scope } from "effect"
import type { ChatProvider } from "@taskmeter/kernel"
import * as ChatRoute from "./ChatRoute.ts"
import * as LocalChatModel from "./LocalChatModel.ts"
import * as OpenAiCompatible from "./OpenAiCompatible.ts"

/** The name of the default upstream (CHAT_UPSTREAM_*), and of its route when CHAT_ROUTES names none. */
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

const CapParameter = Schema.Literals(["max_tokens", "max_completion_tokens"])

const CostPerMillion = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** One entry of CHAT_UPSTREAMS. */
export const NamedUpstream = Schema.Struct({
  name: Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9_-]{0,39}$/)),
  baseUrl: Schema.String.check(Schema.isPattern(/^https?:\/\//)),
  /** The environment variable holding its API key (the key itself stays out of this setting). */
  apiKeyEnv: Schema.optionalKey(Schema.String),
  /** Our chat model id → the upstream's; given, the upstream serves only these models. */
  models: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  capParameter: Schema.optionalKey(CapParameter),
  /** Requests each process keeps open on it at once; past it the route's next upstream is tried. */
  maxConcurrent: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
  /** Requests each process sends it per minute; past it the route's next upstream is tried. */
  requestsPerMinute: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
  /** What it costs us, USD micros per million prompt / completion tokens: recorded with each request it serves. */
  costPromptMicrosPerMillion: Schema.optionalKey(CostPerMillion),
  costCompletionMicrosPerMillion: Schema.optionalKey(CostPerMillion)
})
export type NamedUpstream = typeof NamedUpstream.Type

/** `route=a>b;other=b`: each route's upstreams in fallback order. */
export const parseRoutes = (text: string): ReadonlyArray<readonly [string, ReadonlyArray<string>]> =>
  text
    .split(";")
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0)
    .map((entry) => {
      const at = entry.indexOf("=")
      const name = at < 0 ? entry : entry.slice(0, at).trim()
      const members = (at < 0 ? entry : entry.slice(at + 1)).split(">").map((member) => member.trim())
      return [name, members.filter((member) => member.length > 0)] as const
    })

const settings = Config.all({
  baseUrl: Config.option(Config.String("CHAT_UPSTREAM_BASE_URL")),
  apiKey: Config.option(Config.Redacted("CHAT_UPSTREAM_API_KEY")),
  models: Config.String("CHAT_UPSTREAM_MODELS").pipe(Config.withDefault("")),
  capParameter: Config.schema(CapParameter, "CHAT_UPSTREAM_CAP_PARAMETER").pipe(Config.withDefault("max_tokens" as const)),
  costPrompt: Config.option(Config.schema(CostPerMillion, "CHAT_UPSTREAM_COST_PROMPT_MICROS_PER_MILLION")),
  costCompletion: Config.option(Config.schema(CostPerMillion, "CHAT_UPSTREAM_COST_COMPLETION_MICROS_PER_MILLION")),
  upstreams: Config.schema(Schema.fromJsonString(Schema.Array(NamedUpstream)), "CHAT_UPSTREAMS").pipe(Config.withDefault([])),
  routes: Config.String("CHAT_ROUTES").pipe(Config.withDefault("")),
  localEnabled: Config.Boolean("CHAT_LOCAL_ENABLED").pipe(Config.withDefault(true)),
  tokenDelayMs: Config.Int("CHAT_LOCAL_TOKEN_DELAY_MS").pipe(Config.withDefault(0))
})

type Settings = Config.Success<typeof settings>

const local = (config: Settings) => (config.localEnabled ? [LocalChatModel.make({ tokenDelayMs: config.tokenDelayMs })] : [])

const invalid = (message: string) => Effect.fail(new Config.ConfigError(new ConfigProvider.SourceError({ message })))

/** The upstreams by name: the default one (serving any model) first, then CHAT_UPSTREAMS. */
const upstreamsOf = (config: Settings) =>
  Effect.gen(function* () {
    const members = new Map<string, ChatRoute.Member>()
    if (Option.isSome(config.baseUrl)) {
      members.set(UPSTREAM, {
        models: undefined,
        costPromptMicrosPerMillion: Option.getOrUndefined(config.costPrompt),
        costCompletionMicrosPerMillion: Option.getOrUndefined(config.costCompletion),
        provider: yield* OpenAiCompatible.scoped({
          provider: UPSTREAM,
          baseUrl: config.baseUrl.value,
          apiKey: Option.getOrUndefined(config.apiKey),
          models: parseModels(config.models),
          capParameter: config.capParameter
        })
      })
    }
    for (const upstream of config.upstreams) {
      if (members.has(upstream.name) || upstream.name === LocalChatModel.PROVIDER) {
        return yield* invalid(`CHAT_UPSTREAMS: the name ${upstream.name} is used twice (upstream and local are taken)`)
      }
      const apiKey = upstream.apiKeyEnv === undefined ? undefined : yield* Config.Redacted(upstream.apiKeyEnv)
      members.set(upstream.name, {
        models: upstream.models === undefined ? undefined : new Set(Object.keys(upstream.models)),
        maxConcurrent: upstream.maxConcurrent,
        requestsPerMinute: upstream.requestsPerMinute,
        costPromptMicrosPerMillion: upstream.costPromptMicrosPerMillion,
        costCompletionMicrosPerMillion: upstream.costCompletionMicrosPerMillion,
        provider: yield* OpenAiCompatible.scoped({
          provider: upstream.name,
          baseUrl: upstream.baseUrl,
          ...(apiKey === undefined ? {} : { apiKey: Redacted.value(apiKey) }),
          ...(upstream.models === undefined ? {} : { models: upstream.models }),
          capParameter: upstream.capParameter ?? "max_tokens"
        })
      })
    }
    return members
  })

/** The configured chat providers; the upstreams' connections close with the scope (a layer's, when built in one). */
export const scoped: Effect.Effect<ReadonlyArray<ChatProvider.ChatProviderV1>, Config.ConfigError, Scope.Scope> = Effect.gen(
  function* () {
    const config = yield* settings
    const upstreams = yield* upstreamsOf(config)
    // Every upstream is a route of its own name; CHAT_ROUTES adds routes or replaces them.
    const routes = new Map<string, ReadonlyArray<string>>([...upstreams.keys()].map((name) => [name, [name]]))
    for (const [name, members] of parseRoutes(config.routes)) {
      const unknown = members.find((member) => !upstreams.has(member))
      if (unknown !== undefined || members.length === 0) {
        return yield* invalid(
          `CHAT_ROUTES: route ${name} names ${unknown === undefined ? "no upstream" : `an unknown upstream ${unknown}`}`
        )
      }
      routes.set(name, members)
    }
    const routed = [...routes].map(([name, members]) =>
      ChatRoute.make(
        name,
        members.map((member) => upstreams.get(member)!)
      )
    )
    return [...routed, ...local(config)]
  }
)
