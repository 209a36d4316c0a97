/**
 * Starting the composed server of `npm start` (API, admin service on its own port, in-process
 * workers) programmatically, with storage and executors chosen in code: in-memory storage and a
 * simulated provider whose jobs take half a second. Run `./node_modules/.bin/node
 * examples/http-server/server.ts` from the repository root, then in another shell
 * `npx taskmeter admin --data-dir data/example account create --credits-usd 25`.
 */
import { resolve } from "node:path"
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Option, type Redacted } from "effect"
import { Main, OperatorToken, ServerConfig, Shutdown } from "@taskmeter/http"
import { OAuthStore } from "@taskmeter/mcp"
import { Simulated } from "@taskmeter/providers"
import { MemoryStore } from "@taskmeter/storage-memory"

export interface Options {
  readonly port: number
  /** The admin service's own listener (0: a free port). */
  readonly adminPort: number
  /** Where admin.json (the CLI's way in) goes; a prices.json here seeds the store's empty price list. */
  readonly dataDir: string
  readonly token: Redacted.Redacted<string>
}

export const serverLayer = ({ adminPort, dataDir, port, token }: Options) =>
  Main.server({
    settings: Main.defaults,
    adapters: [Simulated.make({ delayMs: 500 })],
    pricesFile: Main.pricesFileOf(dataDir),
    token,
    dataDir,
    onListening: (url, _publicUrl, adminUrl) =>
      Console.log(`listening on ${url}; admin service on ${adminUrl}, its token in ${dataDir}/admin.json`)
  }).pipe(
    Layer.provide([MemoryStore.layer, OAuthStore.layerMemory]),
    Layer.provide(ServerConfig.layerWith({ port, host: "127.0.0.1", dataDir, adminPort }))
  )

/** Serves on port 8789 (admin service on 8790) with its files in ./data/example until Ctrl-C. */
export const main = Effect.gen(function* () {
  const dataDir = resolve("data/example")
  const token = yield* OperatorToken.resolve(dataDir, Option.none())
  return yield* Layer.launch(serverLayer({ port: 8789, adminPort: 8790, dataDir, token }))
})

if (import.meta.main) NodeRuntime.runMain(main, { teardown: Shutdown.teardown })
