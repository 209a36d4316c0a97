/**
 * The adapters a deployment runs, from configuration (`fromConfig`): every family whose
 * `<FAMILY>_API_KEY` is set (ALPHA, PICGEN, GAMMA, DELTA, EPSILON, SONG; see `ProviderConfig`), in
 * that order, then the `simulated` provider for every model when SIMULATED_ENABLED says so: by
 * default on for the embedded database, off with DATABASE_URL (production), where a family without
 * an upstream then answers EXECUTION_UNAVAILABLE. `roster` names the live and simulated families.
 */
import { Config, Effect, Option, type Scope } from "effect"
import type { Provider } from "@taskmeter/kernel"
import * as Alpha from "./alpha/Alpha.ts"
import * as Delta from "./delta/Delta.ts"
import * as Epsilon from "./epsilon/Epsilon.ts"
import * as Gamma from "./gamma/Gamma.ts"
import * as Picgen from "./picgen/Picgen.ts"
import * as Simulated from "./simulated/Simulated.ts"
import * as Song from "./song/Song.ts"
import * as HttpClient from "./utils/HttpClient.ts"
import * as ShippedCatalog from "./utils/ShippedCatalog.ts"

const families = [Alpha.configWith, Picgen.configWith, Gamma.configWith, Delta.configWith, Epsilon.configWith, Song.configWith]

const adapters = (http?: HttpClient.HttpClient): Config.Config<ReadonlyArray<Provider.ProviderV1>> =>
  Config.all({
    upstreams: Config.all(families.map((family) => Config.option(family(http)))),
    simulatedEnabled: Config.option(Config.Boolean("SIMULATED_ENABLED")),
    production: Config.option(Config.String("DATABASE_URL")).pipe(Config.map(Option.isSome)),
    simulated: Simulated.config
  }).pipe(
    Config.map(({ upstreams, simulatedEnabled, production, simulated }) => [
      ...upstreams.flatMap((adapter) => (Option.isSome(adapter) ? [adapter.value] : [])),
      ...(Option.getOrElse(simulatedEnabled, () => !production) ? [simulated] : [])
    ])
  )

/** A model's family: its slug up to the first `-` (`alpha-2-text-to-image-economy` is alpha's). */
export const familyOf = (model: string): string => model.split("-", 1)[0]!

/** Which families run upstream, which on the simulator, and which on nothing (EXECUTION_UNAVAILABLE). */
export interface Roster {
  readonly live: ReadonlyArray<string>
  readonly simulated: ReadonlyArray<string>
  readonly unavailable: ReadonlyArray<string>
}

/** The roster of `adapters` (in `fromConfig`'s order: the first adapter listing a model runs it) over the shipped catalog. */
export const roster = (adapters: ReadonlyArray<Provider.ProviderV1>): Roster => {
  const runner = new Map<string, string>()
  for (const adapter of adapters) for (const model of adapter.models) if (!runner.has(model)) runner.set(model, adapter.provider)
  const families = (wanted: (provider: string | undefined) => boolean) => [
    ...new Set(ShippedCatalog.models.filter((model) => wanted(runner.get(model.slug))).map((model) => familyOf(model.slug)))
  ]
  return {
    live: families((provider) => provider !== undefined && provider !== Simulated.PROVIDER),
    simulated: families((provider) => provider === Simulated.PROVIDER),
    unavailable: families((provider) => provider === undefined)
  }
}

/** Each configured upstream builds an HttpClient of its own, which nothing closes; prefer `scoped`. */
export const fromConfig: Config.Config<ReadonlyArray<Provider.ProviderV1>> = adapters()

/** `fromConfig`'s adapters over one HttpClient whose connections close with the scope (a layer's, when built in one). */
export const scoped: Effect.Effect<ReadonlyArray<Provider.ProviderV1>, Config.ConfigError, Scope.Scope> = Effect.gen(
  function* () {
    const http = yield* HttpClient.scoped()
    return yield* adapters(http)
  }
)
