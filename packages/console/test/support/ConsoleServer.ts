/**
 * The server `npm start` composes (Main.server: the API, chat, MCP and the console), in this
 * process over storage-memory, with the simulated provider running every model as `npm start`
 * does without upstream settings, on an ephemeral port of 127.0.0.1; open sign-up with starting
 * credits, its mail sent over SMTP to the Inbox.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ConfigProvider, Effect, Layer, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { Main, OperatorToken, ServerConfig } from "@taskmeter/http"
import { OAuthStore } from "@taskmeter/mcp"
import { Simulated } from "@taskmeter/providers"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as Inbox from "./Inbox.ts"

/** What an account made at sign-up starts with. */
export const SIGN_UP_CREDITS_MICROS = 25_000_000

/**
 * The server; `env` (e.g. Stripe's settings) stands in for the environment's configuration,
 * `simulated` are the simulated provider's options (e.g. a delay, to watch a task run).
 */
export const layer = (
  env: Record<string, string> = {},
  simulated: Simulated.Options = {},
  /** A fixed port and the public URL naming it (e.g. http://localhost:<port>, for passkeys); default an ephemeral port, its address. */
  address: { readonly port: number; readonly publicUrl: string } | undefined = undefined
) => {
  const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-console-"))
  const server = Effect.map(Inbox.Inbox, (inbox) =>
    Main.server({
      settings: {
        ...Main.defaults,
        signUpCreditsMicros: SIGN_UP_CREDITS_MICROS,
        publicUrl: Option.fromUndefinedOr(address?.publicUrl),
        smtpUrl: Option.some(Redacted.make(`smtp://127.0.0.1:${inbox.port}`))
      },
      adapters: [Simulated.make(simulated)],
      pricesFile: Main.pricesFileOf(dataDir),
      token: OperatorToken.generate(),
      dataDir
    }).pipe(
      Layer.provideMerge(Layer.merge(MemoryStore.layer, OAuthStore.layerMemory)),
      Layer.provide(ServerConfig.layerWith({ port: address?.port ?? 0, host: "127.0.0.1", dataDir, adminPort: 0 })),
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)))
    )
  )
  return Layer.unwrap(server).pipe(Layer.provideMerge(Inbox.layer))
}

/** The server's address, e.g. http://127.0.0.1:41234. */
export const baseUrl = Effect.map(HttpServer.HttpServer, (server) => HttpServer.formatAddress(server.address))
