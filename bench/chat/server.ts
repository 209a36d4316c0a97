/**
 * The benchmark's taskmeter server, in a process of its own: the API and the chat routes over
 * storage-memory (or PostgreSQL with STORE=pg), chat-mini served by the upstream at
 * UPSTREAM_URL, limits out of the way, tracing as the server has it (Tracing: off unless an OTLP
 * endpoint is configured). Prints one JSON line: its base URL and the keys of ACCOUNTS (default 1)
 * accounts funded with CREDITS each.
 */
import { randomUUID } from "node:crypto"
import { mkdtemp } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import {
  Accounts,
  BlobStore,
  Catalog,
  Ledger,
  Mailer,
  MediaUrls,
  Money,
  Pricer,
  ResultUrls,
  TaskRunner,
  WebhookEndpoints
} from "@taskmeter/kernel"
import { OpenAiCompatible } from "@taskmeter/providers"
import { MemoryStore } from "@taskmeter/storage-memory"
import { ChatServer, ChatServices, ConsoleAuth, Server, ServerConfig, Tracing } from "@taskmeter/http"
import { OAuthStore } from "@taskmeter/mcp"
import { scratchPgStore } from "../support/scratchPgStore.ts"

export const CREDITS = 1_000_000_000

// Server.layer serves signed media and result links; nothing here signs any, so any secret will do.
const linkSecret = Redacted.make(randomUUID() + randomUUID())

const kernel = Layer.mergeAll(
  TaskRunner.layer({ executorAvailable: () => true }).pipe(
    Layer.provideMerge(Accounts.layer({ defaultRateLimitPerMinute: 100_000_000 }))
  ),
  Ledger.layer,
  ConsoleAuth.layer({ publicBaseUrl: "http://127.0.0.1", signUp: "open", signUpCreditsMicros: Money.micros(0) }).pipe(
    Layer.provide(Mailer.layerMemory())
  ),
  WebhookEndpoints.layer()
).pipe(
  Layer.provideMerge(Pricer.layerDefault),
  Layer.provideMerge(
    Layer.mergeAll(
      Catalog.layer,
      MediaUrls.layer({ baseUrl: "http://127.0.0.1", secret: linkSecret }),
      ResultUrls.layer({ secret: linkSecret })
    )
  )
)

const chat = ChatServices.layer({
  providers: [OpenAiCompatible.make({ provider: "upstream", baseUrl: process.env.UPSTREAM_URL!, apiKey: "bench" })],
  limits: { requestsPerMinute: 100_000_000, maxOpenRequests: 100_000 }
})

const serveOver = <E>(store: Layer.Layer<MemoryStore.Stores, E>) =>
  Server.serve(Layer.mergeAll(Server.layer, ChatServer.layer), { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(chat),
    Layer.provideMerge(kernel),
    Layer.provideMerge(store),
    Layer.provide(OAuthStore.layerMemory),
    Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1" })),
    Layer.provide(Tracing.layer)
  )

const store =
  process.env.STORE === "pg"
    ? Layer.merge(scratchPgStore("bench_chat"), BlobStore.layerFileSystem(await mkdtemp(join(tmpdir(), "bench-chat-blobs-"))))
    : MemoryStore.layer

const announce = Layer.effectDiscard(
  Effect.gen(function* () {
    const { address } = yield* HttpServer.HttpServer
    if (address._tag === "UnixPathAddress") return yield* Effect.die("TCP expected")
    const accounts = yield* Accounts.Accounts
    const keys: Array<string> = []
    for (let i = 0; i < Number(process.env.ACCOUNTS ?? 1); i++) {
      keys.push((yield* accounts.create({ name: `bench ${i}`, credits: Money.micros(CREDITS) })).key.secret)
    }
    yield* Effect.sync(() => console.log(JSON.stringify({ url: `http://127.0.0.1:${address.port}/api/v1`, keys })))
  })
)

const main = Effect.runFork(Layer.launch(announce.pipe(Layer.provideMerge(serveOver(store)))))
// run.ts stops this process with SIGTERM: close the layers (dropping a PostgreSQL schema) first.
process.once("SIGTERM", () => main.interruptUnsafe())
