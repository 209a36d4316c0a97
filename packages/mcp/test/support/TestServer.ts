/**
 * The whole service on a real HTTP server at an ephemeral port of 127.0.0.1: the API and the
 * MCP endpoint on one HttpRouter, the real kernel over storage-memory, and a task worker with
 * the offline simulated provider, so tasks really run to completion.
 */
import { randomUUID } from "node:crypto"
import { createServer } from "node:net"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { HttpRouter } from "effect/http"
import { NodeHttpServer } from "@effect/platform-node"
import { createServer as createHttpServer } from "node:http"
import {
  Accounts,
  Catalog,
  Executors,
  Ledger,
  Mailer,
  MediaUrls,
  Money,
  Pricer,
  ResultUrls,
  TaskRunner,
  TaskWorker
} from "@taskmeter/kernel"
import type { Ids } from "@taskmeter/kernel"
import { ConsoleAuth, Server, ServerConfig } from "@taskmeter/http"
import { Simulated } from "@taskmeter/providers"
import { MemoryStore } from "@taskmeter/storage-memory"
import { McpEndpoint, OAuthStore } from "../../src/index.ts"

/** A TCP port free a moment ago, so the base URL is known before the server starts. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      probe.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))))
    })
  })

export interface Options extends Partial<Omit<McpEndpoint.Options, "baseUrl">> {
  /** How long simulated jobs stay pending (default 1.5 s, so waiting is observable). */
  readonly simulatedDelayMs?: number
  /** The OAuth store (default: in memory). */
  readonly oauthStore?: Layer.Layer<OAuthStore.OAuthStore>
}

export const make = async ({ simulatedDelayMs, oauthStore, ...endpoint }: Options = {}) => {
  const port = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  const simulated = Simulated.make({ delayMs: simulatedDelayMs ?? 1_500 })
  const executors = Executors.make({ adapters: [simulated] })
  const secret = Redacted.make(randomUUID() + randomUUID())
  const kernel = Layer.mergeAll(
    Ledger.layer,
    ConsoleAuth.layer({ publicBaseUrl: baseUrl, signUp: "open", signUpCreditsMicros: Money.micros(0) }).pipe(
      Layer.provide(Mailer.layerMemory())
    ),
    TaskRunner.layer({
      executorAvailable: executors.executorAvailable,
      submissionsPerMinute: 1000,
      maxUnfinishedTasks: 100
    }).pipe(Layer.provideMerge(Accounts.layer({ defaultRateLimitPerMinute: 100_000 })))
  ).pipe(
    Layer.provideMerge(Pricer.layerDefault),
    Layer.provideMerge(
      Layer.mergeAll(
        Catalog.layer,
        Layer.succeed(Executors.Executors, executors),
        MediaUrls.layer({ baseUrl, secret }),
        ResultUrls.layer({ secret })
      )
    ),
    Layer.provideMerge(MemoryStore.layer),
    Layer.provideMerge(oauthStore ?? OAuthStore.layerMemory)
  )
  const app = Layer.mergeAll(
    Server.layer,
    McpEndpoint.layer({
      baseUrl,
      clientIdMetadata: { allowHttpLoopback: true },
      // Every test registers and signs in from 127.0.0.1; the limits have tests of their own.
      registrationLimit: { perSource: 10_000 },
      authorizeLimit: { perSource: 10_000 },
      ...endpoint
    })
  )
  const served = HttpRouter.serve(app, { disableLogger: true }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(createHttpServer, { port, host: "127.0.0.1" }))
  )
  const runtime = ManagedRuntime.make(
    Layer.mergeAll(served, TaskWorker.layer({ pollInitialMs: 200, pollMaxMs: 500, idleWaitMs: 200 })).pipe(
      Layer.provideMerge(kernel),
      Layer.provide(ServerConfig.layerWith({ port })),
      Layer.orDie
    )
  )
  await runtime.runPromise(Effect.void)

  /** A new account holding `credits` micros, with an API key made with `keyOptions`. */
  const customer = (credits = 10_000_000, keyOptions: Accounts.KeyOptions = {}) =>
    runtime.runPromise(
      Effect.gen(function* () {
        const accounts = yield* Accounts.Accounts
        const { account } = yield* accounts.create({ name: `acme-${randomUUID().slice(0, 8)}`, credits: Money.micros(credits) })
        const key = yield* accounts.createKey(account.id, keyOptions)
        return { accountId: account.id, keyId: key.record.id, secret: key.secret }
      })
    )

  const balances = (accountId: Ids.AccountId) => runtime.runPromise(Ledger.Ledger.use((ledger) => ledger.balances(accountId)))

  return { baseUrl, runtime, customer, balances, simulated, close: () => runtime.dispose() }
}

export type TestServer = Awaited<ReturnType<typeof make>>
