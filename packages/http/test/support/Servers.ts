/**
 * Servers of `npm start` (main.ts `server` over `serverStorage`, no workers) as separate
 * machines would run them: each with a data directory of its own, two models served by the
 * simulated provider, sharing one PostgreSQL schema; and the calls a test makes to them.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { Simulated } from "@taskmeter/providers"
import * as AdminClient from "../../src/admin/AdminClient.ts"
import * as AdminServer from "../../src/admin/AdminServer.ts"
import * as OperatorToken from "../../src/admin/OperatorToken.ts"
import * as Main from "../../src/main.ts"
import * as ServerConfig from "../../src/ServerConfig.ts"
import { databaseUrl, freshSchema } from "./stores.ts"

/** The models the servers' workers would run (they are off), and their default prices. */
export const SERVED = "song-lyrics"
export const SERVED_PRICE = 5_000
export const ALSO_SERVED = "alpha-2-lite-text-to-image-economy"
export const ALSO_SERVED_PRICE = 25_000

/** The operator token of every server here. */
export const token = OperatorToken.generate()

/** The admin listener of each server started here, by the server's API address. */
const adminUrls = new Map<string, string>()

/** A server on the settings' storage, with a data directory of its own (ADMIN_PORT=0); its address. */
export const serverOn = (settings: Main.Settings) =>
  Effect.gen(function* () {
    const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-server-"))
    const context = yield* Layer.build(
      Main.server({
        settings,
        adapters: [Simulated.make({ models: [SERVED, ALSO_SERVED] })],
        pricesFile: Main.pricesFileOf(dataDir),
        token,
        dataDir
      }).pipe(
        Layer.provideMerge(Main.serverStorage(dataDir, settings)),
        Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir, adminPort: 0 }))
      )
    )
    const url = HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
    adminUrls.set(url, Main.localUrl(Context.get(context, AdminServer.AdminListener).address))
    return url
  })

/** Two servers started together on a fresh schema (`<prefix>_...`), dropped at the end of the scope. */
export const twoServers = (prefix: string) =>
  Effect.gen(function* () {
    const schema = yield* freshSchema(prefix)
    const settings: Main.Settings = {
      ...Main.defaults,
      databaseUrl: Option.some(Redacted.make(databaseUrl)),
      databaseSchema: Option.some(schema),
      workers: false
    }
    return yield* Effect.all([serverOn(settings), serverOn(settings)], { concurrency: 2 })
  })

/** A call of the admin service (on its own listener) of the server whose API is at `url`. */
export const admin = <A, E>(url: string, f: (client: AdminClient.AdminClient["Service"]) => Effect.Effect<A, E>) =>
  AdminClient.AdminClient.use(f).pipe(Effect.provide(AdminClient.layer({ url: adminUrls.get(url) ?? url, token })))

export const fetchJson = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    return { status: response.status, headers: response.headers, body: (await response.json()) as any }
  })

/** Reads until `done` holds, every 50 ms, for at most 10 s (the servers' version check runs every 5 s). */
export const eventually = <A, E>(read: Effect.Effect<A, E>, done: (value: A) => boolean) =>
  Effect.gen(function* () {
    const deadline = Date.now() + 10_000
    let value = yield* read
    while (!done(value) && Date.now() < deadline) {
      yield* Effect.sleep("50 millis")
      value = yield* read
    }
    return value
  })
