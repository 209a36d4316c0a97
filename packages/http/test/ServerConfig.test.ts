import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import { ServerConfig } from "../src/index.ts"

const read = (env: Record<string, string>) =>
  ServerConfig.config.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })))

describe("ServerConfig", () => {
  it.effect("falls back to the documented defaults", () =>
    Effect.gen(function* () {
      expect(yield* read({})).toEqual({
        port: 8787,
        host: "127.0.0.1",
        dataDir: "./data",
        maxUploadBytes: 104_857_600,
        adminHost: "127.0.0.1",
        adminPort: 8788
      })
    })
  )

  it.effect("reads PORT, HOST, DATA_DIR, MAX_UPLOAD_BYTES, ADMIN_HOST and ADMIN_PORT", () =>
    Effect.gen(function* () {
      const settings = yield* read({
        PORT: "0",
        HOST: "0.0.0.0",
        DATA_DIR: "/var/lib/taskmeter",
        MAX_UPLOAD_BYTES: "1048576",
        ADMIN_HOST: "::1",
        ADMIN_PORT: "0"
      })
      expect(settings).toEqual({
        port: 0,
        host: "0.0.0.0",
        dataDir: "/var/lib/taskmeter",
        maxUploadBytes: 1_048_576,
        adminHost: "::1",
        adminPort: 0
      })
    })
  )

  it.effect("refuses values out of range instead of guessing", () =>
    Effect.gen(function* () {
      const cases: Array<Record<string, string>> = [
        { PORT: "70000" },
        { PORT: "http" },
        { ADMIN_PORT: "65536" },
        { MAX_UPLOAD_BYTES: "0" },
        { MAX_UPLOAD_BYTES: "1.5" }
      ]
      for (const env of cases) {
        const error = yield* Effect.flip(read(env))
        expect(error._tag, JSON.stringify(env)).toBe("ConfigError")
      }
    })
  )
})
