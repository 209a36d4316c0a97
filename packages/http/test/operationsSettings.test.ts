/** SIMULATED_PRICE, MODEL_CONCURRENCY and MODEL_DEADLINE_SECONDS as `Main.config` reads them, and the executors they make. */
import { ConfigProvider, Effect } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { Simulated } from "@taskmeter/providers"
import * as Main from "../src/main.ts"

const read = (env: Record<string, string>) =>
  Main.config.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })))

describe("operations settings", () => {
  it.effect("default to list prices and no per-model limits or deadlines", () =>
    Effect.gen(function* () {
      const settings = yield* read({})
      expect(settings).toMatchObject({ simulatedPrice: "list", modelConcurrency: {}, modelDeadlineSeconds: {} })
    })
  )

  it.effect("read comma-separated model=number lists and SIMULATED_PRICE", () =>
    Effect.gen(function* () {
      const settings = yield* read({
        SIMULATED_PRICE: "zero",
        MODEL_CONCURRENCY: "song-lyrics=2, alpha-pro-edit-economy = 1",
        MODEL_DEADLINE_SECONDS: "song-lyrics=120"
      })
      expect(settings.simulatedPrice).toBe("zero")
      expect(settings.modelConcurrency).toEqual({ "song-lyrics": 2, "alpha-pro-edit-economy": 1 })
      expect(settings.modelDeadlineSeconds).toEqual({ "song-lyrics": 120 })
    })
  )

  it.effect("refuse what they cannot use, saying what to write", () =>
    Effect.gen(function* () {
      const unknown = yield* Effect.flip(read({ MODEL_CONCURRENCY: "song-lyric=2" }))
      expect(unknown.message).toContain('"song-lyric" is not a model of the catalog')
      const zero = yield* Effect.flip(read({ MODEL_DEADLINE_SECONDS: "song-lyrics=0" }))
      expect(zero.message).toContain("is not <model>=<whole number of at least 1>")
      const price = yield* Effect.flip(read({ SIMULATED_PRICE: "free" }))
      expect(price._tag).toBe("ConfigError")
    })
  )

  it("MODEL_CONCURRENCY becomes store lanes of the models served here", () => {
    const executors = Main.executorsOf([Simulated.make({ models: ["song-lyrics"], maxConcurrency: 3 })], {
      modelConcurrency: { "song-lyrics": 2, "alpha-pro-edit-economy": 1 }
    })
    expect(executors.lanesFor("song-lyrics")).toEqual([
      { lane: "model:song-lyrics", limit: 2 },
      { lane: "provider:simulated", limit: 3 }
    ])
    expect(executors.lanesFor("alpha-pro-edit-economy")).toEqual([])
  })
})
