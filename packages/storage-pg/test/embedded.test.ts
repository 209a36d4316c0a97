/**
 * The embedded store: one owner per data directory, and a lock left by a dead process does not
 * keep the data locked away.
 */
import { spawnSync } from "node:child_process"
import { writeFile } from "node:fs/promises"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { AccountStore } from "@taskmeter/kernel"
import { PgStore } from "../src/index.ts"
import { makeTemplate, pgliteDataDir, removeTemplate } from "./TestDatabase.ts"

beforeAll(makeTemplate)
afterAll(removeTemplate)

const listAccounts = AccountStore.AccountStore.use((store) => store.listAccounts)

describe("the embedded store", () => {
  it.live("refuses a second store on a data directory that is open", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dataDir = yield* pgliteDataDir
        yield* Layer.build(PgStore.layerEmbedded({ dataDir }))
        const error = yield* Effect.flip(Effect.scoped(Layer.build(PgStore.layerEmbedded({ dataDir }))))
        expect(error._tag).toBe("StoreUnavailable")
        expect(error.message).toContain(`in use by process ${process.pid}`)
      })
    )
  )

  it.live("takes over the lock of a process that is gone", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dataDir = yield* pgliteDataDir
        const gone = spawnSync(process.execPath, ["-e", "process.exit(0)"]).pid
        yield* Effect.promise(() => writeFile(join(dataDir, "pg.lock"), String(gone)))
        const accounts = yield* Effect.scoped(listAccounts.pipe(Effect.provide(PgStore.layerEmbedded({ dataDir }))))
        expect(accounts).toEqual([])
        // Closed: the directory is free again.
        yield* Effect.scoped(listAccounts.pipe(Effect.provide(PgStore.layerEmbedded({ dataDir }))))
      })
    )
  )
})
