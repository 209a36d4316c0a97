/**
 * The adapters a deployment runs, from configuration (`fromConfig`): every family whose
 * `<FAMILY>_API_KEY` is set (ALPHA, PICGEN, GAMMA, DELTA, EPSILON, SONG; see `ProviderConfig`), in
 * that order, then the `simulated` provider for every model unless SIMULATED_ENABLED is false. A
 * configured upstream therefore wins over the simulator, and with no key every model runs simulated.
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

const families = [Alpha.configWith, Picgen.configWith, Gamma.configWith, Delta.configWith, Epsilon.configWith, Song.configWith]

const adapters = (http?: HttpClient.HttpClient): Config.Config<ReadonlyArray<Provider.ProviderV1>> =>
  Config.all({
    upstreams: Config.all(families.map((family) => Config.option(family(http)))),
    simulatedEnabled: Config.Boolean("SIMULATED_ENABLED").pipe(Config.withDefault(true)),
    simulated: Simulated.config
  }).pipe(
    Config.map(({ upstreams, simulatedEnabled, simulated }) => [
      ...upstreams.flatMap((adapter) => (Option.isSome(adapter) ? [adapter.value] : [])),
      ...(simulatedEnabled ? [simulated] : [])
    ])
  )

/** Each configured upstream builds an HttpClient of its own, which nothing closes; prefer `scoped`. */
export const fromConfig: Config.Config<ReadonlyArray<Provider.ProviderV1>> = adapters()

/** `fromConfig`'s adapters over one HttpClient whose connections close with the scope (a layer's, when built in one). */
export const scoped: Effect.Effect<ReadonlyArray<Provider.ProviderV1>, Config.ConfigError, Scope.Scope> = Effect.gen(
  function* () {
    const http = yield* HttpClient.scoped()
    return yield* adapters(http)
  }
)
