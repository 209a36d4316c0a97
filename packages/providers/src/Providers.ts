/**
 * The adapters a deployment runs, from configuration (`fromConfig`): every family whose
 * `<FAMILY>_API_KEY` is set (ALPHA, PICGEN, GAMMA, DELTA, EPSILON, SONG; see `ProviderConfig`), in
 * that order, then the `simulated` provider for every model unless SIMULATED_ENABLED is false. A
 * configured upstream therefore wins over the simulator, and with no key every model runs simulated.
 */
import { Config, Option } from "effect"
import type { Provider } from "@taskmeter/kernel"
import * as Alpha from "./alpha/Alpha.ts"
import * as Delta from "./delta/Delta.ts"
import * as Epsilon from "./epsilon/Epsilon.ts"
import * as Gamma from "./gamma/Gamma.ts"
import * as Picgen from "./picgen/Picgen.ts"
import * as Simulated from "./simulated/Simulated.ts"
import * as Song from "./song/Song.ts"

const families = [Alpha.config, Picgen.config, Gamma.config, Delta.config, Epsilon.config, Song.config]

export const fromConfig: Config.Config<ReadonlyArray<Provider.ProviderV1>> = Config.all({
  upstreams: Config.all(families.map(Config.option)),
  simulatedEnabled: Config.Boolean("SIMULATED_ENABLED").pipe(Config.withDefault(true)),
  simulated: Simulated.config
}).pipe(Config.map(({ upstreams, simulatedEnabled, simulated }) => [
  ...upstreams.flatMap((adapter) => Option.isSome(adapter) ? [adapter.value] : []),
  ...(simulatedEnabled ? [simulated] : [])
]))
