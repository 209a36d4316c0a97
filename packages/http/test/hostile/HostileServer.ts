/**
 * The composed server of `npm start` (main.ts `server`: the API, chat, the MCP endpoint with its
 * OAuth sign-in, and the admin RPC service; no workers), started once per test file for the
 * hostile-input corpus and its properties, on storage-memory or on the PostgreSQL at
 * TEST_DATABASE_URL (a schema of its own, dropped afterwards). Limits are raised far above what a
 * corpus run sends, so that no case meets a rate or concurrency limit instead of the check it
 * is about. Every model is served by the offline simulated provider (no worker runs: tasks
 * stay queued), so a submission the corpus expects refused is admitted when it is not.
 *
 * The admin RPC service listens on its own listener (ADMIN_HOST 127.0.0.1, ADMIN_PORT 0: a free
 * port), reached through `adminBaseUrl`; the public port answers 404 there.
 */
import { randomUUID } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Layer, ManagedRuntime, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { Accounts, Money } from "@taskmeter/kernel"
import { OAuthStore } from "@taskmeter/mcp"
import { Simulated } from "@taskmeter/providers"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as AdminServer from "../../src/admin/AdminServer.ts"
import * as OperatorToken from "../../src/admin/OperatorToken.ts"
import * as Main from "../../src/main.ts"
import * as ServerConfig from "../../src/ServerConfig.ts"
import { databaseUrl, dropSchema, schemaName } from "../support/stores.ts"

export type Storage = "memory" | "postgres"

export interface Customer {
  readonly accountId: string
  readonly keyId: string
  readonly secret: string
}

export interface HostileServer {
  /** http://127.0.0.1:<port> of the public listener (API, chat, OAuth, MCP). */
  readonly baseUrl: string
  /** http://127.0.0.1:<port> of the admin RPC service's own listener. */
  readonly adminBaseUrl: string
  /** The admin RPC path on `adminBaseUrl`. */
  readonly adminPath: string
  readonly operatorToken: string
  /** A customer with ample credits and every scope. */
  readonly customer: Customer
  /** Another customer (for ownership cases). */
  readonly other: Customer
  readonly newCustomer: (credits?: number) => Promise<Customer>
  readonly close: () => Promise<void>
}

const settingsFor = (storage: Storage, schema: string): Main.Settings => ({
  ...Main.defaults,
  workers: false,
  submissionsPerMinute: 1_000_000,
  maxUnfinishedTasks: 1_000_000,
  keyRateLimitPerMinute: 1_000_000,
  mcpRegistrationsPerHour: 1_000_000,
  mcpRegistrationsPerHourTotal: 1_000_000,
  mcpAuthorizationsPerMinute: 1_000_000,
  ...(storage === "postgres" ? { databaseUrl: Option.some(Redacted.make(databaseUrl)), databaseSchema: Option.some(schema) } : {})
})

export const start = async (storage: Storage = "memory"): Promise<HostileServer> => {
  // Chat limits come from the environment (ChatServices.layerConfig): raise them for the corpus.
  process.env.CHAT_REQUESTS_PER_MINUTE ??= "1000000"
  process.env.CHAT_MAX_OPEN_REQUESTS ??= "1000"
  const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-hostile-"))
  const token = OperatorToken.generate()
  const schema = schemaName("hostile")
  const settings = settingsFor(storage, schema)
  const stores =
    storage === "postgres"
      ? Main.serverStorage(dataDir, settings).pipe(
          Layer.provideMerge(Layer.effectDiscard(Effect.addFinalizer(() => dropSchema(schema))))
        )
      : Layer.merge(MemoryStore.layer, OAuthStore.layerMemory)
  const server = Main.server({
    settings,
    adapters: [Simulated.make()],
    pricesFile: Main.pricesFileOf(dataDir),
    token,
    dataDir
  }).pipe(
    Layer.provideMerge(stores),
    Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir, adminHost: "127.0.0.1", adminPort: 0 })),
    Layer.orDie
  )
  const runtime = ManagedRuntime.make(server)
  const context = await runtime.runPromise(Effect.context<HttpServer.HttpServer | AdminServer.AdminListener>())
  const baseUrl = HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
  const adminBaseUrl = HttpServer.formatAddress(Context.get(context, AdminServer.AdminListener).address)
  const newCustomer = (credits = 1_000_000_000) =>
    runtime.runPromise(
      Effect.gen(function* () {
        const accounts = yield* Accounts.Accounts
        const { account } = yield* accounts.create({
          name: `hostile-${randomUUID().slice(0, 8)}`,
          credits: Money.micros(credits)
        })
        const key = yield* accounts.createKey(account.id, {})
        return { accountId: account.id, keyId: key.record.id, secret: key.secret } satisfies Customer
      })
    )
  return {
    baseUrl,
    adminBaseUrl,
    adminPath: AdminServer.PATH,
    operatorToken: Redacted.value(token),
    customer: await newCustomer(),
    other: await newCustomer(),
    newCustomer,
    close: () => runtime.dispose()
  }
}
