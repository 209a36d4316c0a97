/**
 * MAX_WAITS_PER_PROCESS, SSE_MAX_STREAMS_PER_ACCOUNT, SSE_STREAM_LEASE_SECONDS and SSE_HEARTBEAT_SECONDS
 * as `Main.config` reads them.
 */
import { ConfigProvider, Effect } from "effect"
import { describe, expect, it } from "@effect/vitest"
import * as Main from "../src/main.ts"

const read = (env: Record<string, string>) =>
  Main.config.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })))

describe("wait and event-stream settings", () => {
  it.effect("default to 1000 waits per process, 100 streams per account, a 30 s stream lease and a heartbeat every 15 s", () =>
    Effect.gen(function* () {
      expect(yield* read({})).toMatchObject({
        maxWaitsPerProcess: 1000,
        sseMaxStreamsPerAccount: 100,
        sseStreamLeaseSeconds: 30,
        sseHeartbeatSeconds: 15
      })
    })
  )

  it.effect("take whole numbers of at least 1, and refuse others", () =>
    Effect.gen(function* () {
      const settings = yield* read({
        MAX_WAITS_PER_PROCESS: "50",
        SSE_MAX_STREAMS_PER_ACCOUNT: "5",
        SSE_STREAM_LEASE_SECONDS: "10",
        SSE_HEARTBEAT_SECONDS: "30"
      })
      expect(settings).toMatchObject({
        maxWaitsPerProcess: 50,
        sseMaxStreamsPerAccount: 5,
        sseStreamLeaseSeconds: 10,
        sseHeartbeatSeconds: 30
      })
      for (const env of [
        { MAX_WAITS_PER_PROCESS: "0" },
        { SSE_MAX_STREAMS_PER_ACCOUNT: "many" },
        { SSE_STREAM_LEASE_SECONDS: "0" },
        { SSE_HEARTBEAT_SECONDS: "1.5" }
      ]) {
        expect((yield* Effect.flip(read(env)))._tag).toBe("ConfigError")
      }
    })
  )
})
