/**
 * The server `npm start` composes (Main.server: the API, chat, MCP and the console), in this
 * process over storage-memory, with the simulated provider running every model as `npm start`
 * does without upstream settings, on an ephemeral port of 127.0.0.1; and a customer made as the
 * operator would (an account with credits and an API key).
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { Accounts, Money } from "@taskmeter/kernel"
import { Main, OperatorToken, ServerConfig } from "@taskmeter/http"
import { OAuthStore } from "@taskmeter/mcp"
import { Simulated } from "@taskmeter/providers"
import { MemoryStore } from "@taskmeter/storage-memory"

export const layer = () => {
  const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-console-"))
  return Main.server({
    settings: Main.defaults,
    adapters: [Simulated.make()],
    pricesFile: Main.pricesFileOf(dataDir),
    token: OperatorToken.generate(),
    dataDir
  }).pipe(
    Layer.provideMerge(Layer.merge(MemoryStore.layer, OAuthStore.layerMemory)),
    Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir, adminPort: 0 }))
  )
}

/** The server's address, e.g. http://127.0.0.1:41234. */
export const baseUrl = Effect.map(HttpServer.HttpServer, (server) => HttpServer.formatAddress(server.address))

/** An account holding `usd` of credits, and an API key of it with every scope. */
export const customer = (usd = 25) =>
  Effect.gen(function* () {
    const accounts = yield* Accounts.Accounts
    const { account } = yield* accounts.create({ name: "console-journey", credits: Money.micros(usd * 1_000_000) })
    const key = yield* accounts.createKey(account.id, { name: "journey" })
    return { accountId: account.id, secret: key.secret }
  })
