import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import { Providers } from "@taskmeter/providers"

const adaptersFrom = (env: Record<string, string>) =>
  Providers.fromConfig.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown(env)))

describe("Providers.fromConfig", () => {
  it.effect("with no upstream key, runs everything on the simulated provider", () =>
    Effect.gen(function* () {
      const adapters = yield* adaptersFrom({})
      expect(adapters.map((adapter) => adapter.provider)).toEqual(["simulated"])
      expect(adapters[0]!.models).toHaveLength(33)
    })
  )

  it.effect("puts configured upstreams before the simulator, which can be turned off", () =>
    Effect.gen(function* () {
      const adapters = yield* adaptersFrom({
        ALPHA_API_KEY: "a",
        SONG_API_KEY: "s",
        SONG_BASE_URL: "https://song.example.test",
        EPSILON_MAX_CONCURRENCY: "3",
        EPSILON_API_KEY: "e"
      })
      expect(adapters.map((adapter) => adapter.provider)).toEqual(["alpha", "epsilon", "song", "simulated"])
      expect(adapters[1]!.maxConcurrency).toBe(3)
      const without = yield* adaptersFrom({ PICGEN_API_KEY: "p", SIMULATED_ENABLED: "false" })
      expect(without.map((adapter) => adapter.provider)).toEqual(["picgen"])
    })
  )

  it.effect("with DATABASE_URL (production), the simulator runs only when SIMULATED_ENABLED=true", () =>
    Effect.gen(function* () {
      const production = { DATABASE_URL: "postgres://db.example.test/taskmeter", ALPHA_API_KEY: "a" }
      expect((yield* adaptersFrom(production)).map((adapter) => adapter.provider)).toEqual(["alpha"])
      const opted = yield* adaptersFrom({ ...production, SIMULATED_ENABLED: "true" })
      expect(opted.map((adapter) => adapter.provider)).toEqual(["alpha", "simulated"])
    })
  )
})

describe("Providers.roster", () => {
  it.effect("names the families run upstream, on the simulator, and on nothing", () =>
    Effect.gen(function* () {
      const mixed = Providers.roster(yield* adaptersFrom({ ALPHA_API_KEY: "a", SONG_API_KEY: "s" }))
      expect(mixed).toEqual({ live: ["alpha", "song"], simulated: ["picgen", "gamma", "delta", "epsilon"], unavailable: [] })
      const production = Providers.roster(yield* adaptersFrom({ DATABASE_URL: "postgres://db.test/t", ALPHA_API_KEY: "a" }))
      expect(production.live).toEqual(["alpha"])
      expect(production.simulated).toEqual([])
      expect(production.unavailable).toEqual(["picgen", "gamma", "delta", "epsilon", "song"])
    })
  )
})
