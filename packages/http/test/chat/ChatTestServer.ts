/**
 * The API with the chat routes served over real HTTP on an ephemeral port, on the real kernel
 * over storage-memory. Chat models: the shipped chat price list, so `taskmeter-local` runs on
 * the offline model and `chat-pro`/`chat-mini` on an OpenAI-compatible upstream at UPSTREAM,
 * which the tests answer with msw.
 */
import { randomUUID } from "node:crypto"
import { ConfigProvider, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { Accounts, Catalog, ChatBilling, Ledger, Money, Pricer, TaskRunner, WebhookEndpoints } from "@taskmeter/kernel"
import type { ChatProvider, Ids, Scope } from "@taskmeter/kernel"
import { ChatUpstreams, LocalChatModel, OpenAiCompatible } from "@taskmeter/providers"
import { MemoryStore } from "@taskmeter/storage-memory"
import { OAuthStore } from "@taskmeter/mcp"
import OpenAI from "openai"
import * as BillingServer from "../../src/billing/BillingServer.ts"
import * as ChatServer from "../../src/chat/ChatServer.ts"
import * as ChatServices from "../../src/chat/ChatServices.ts"
import { Server, ServerConfig } from "../../src/index.ts"
import { consoleAuth, signedLinks } from "../support/TestServer.ts"

export const UPSTREAM = "https://chat.upstream.test/v1"

/** Short upstream timeouts, so the timeout cases take a moment. */
export const upstreamTimeouts = { firstByteTimeoutMs: 400, idleTimeoutMs: 400, requestTimeoutMs: 400 }

export const layer = (
  options: {
    readonly limits?: ChatBilling.Limits
    /** In place of the default upstream at UPSTREAM (the offline model stays). */
    readonly upstream?: ChatProvider.ChatProviderV1
    /** The chat providers as a deployment configures them (ChatUpstreams), from these settings. */
    readonly upstreamEnv?: Record<string, string>
  } = {}
) => {
  const kernel = Layer.mergeAll(
    TaskRunner.layer({ executorAvailable: () => true }).pipe(
      Layer.provideMerge(Accounts.layer({ defaultRateLimitPerMinute: 100_000 }))
    ),
    Ledger.layer,
    consoleAuth(),
    WebhookEndpoints.layer()
  ).pipe(Layer.provideMerge(Pricer.layerDefault), Layer.provideMerge(Layer.merge(Catalog.layer, signedLinks)))
  const chatWith = (providers: ReadonlyArray<ChatProvider.ChatProviderV1>) =>
    ChatServices.layer({
      providers,
      limits: options.limits,
      // Idle credit leases are closed at once, so that the books show nothing reserved soon after a request.
      leaseIdleMs: 20
    })
  const { upstreamEnv } = options
  const chat =
    upstreamEnv === undefined
      ? chatWith([
          LocalChatModel.make(),
          options.upstream ??
            OpenAiCompatible.make({
              provider: "upstream",
              baseUrl: UPSTREAM,
              apiKey: "sk-upstream",
              models: { "chat-pro": "vendor-pro-2" },
              ...upstreamTimeouts
            })
        ])
      : Layer.unwrap(
          Effect.map(
            ChatUpstreams.scoped.pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: upstreamEnv })))),
            chatWith
          )
        )
  return Server.serve(Layer.mergeAll(Server.layer, ChatServer.layer, BillingServer.layer), {
    disableLogger: true,
    disableListenLog: true
  }).pipe(
    Layer.provideMerge(chat),
    Layer.provideMerge(kernel),
    Layer.provideMerge(MemoryStore.layer),
    Layer.provide(OAuthStore.layerMemory),
    Layer.provide(ServerConfig.layerWith({ port: 0 })),
    Layer.orDie
  )
}

export const baseUrl = Effect.gen(function* () {
  const { address } = yield* HttpServer.HttpServer
  if (address._tag === "UnixPathAddress") return yield* Effect.die("the server should listen on TCP")
  return `http://127.0.0.1:${address.port}`
})

export interface Customer {
  readonly accountId: Ids.AccountId
  readonly secret: string
  /** The official client, pointed at this server with the customer's key. */
  readonly openai: OpenAI
}

/** A new account holding `credits` micros, with a key of the given scopes (all by default). */
export const customer = (credits: number, scopes?: ReadonlyArray<Scope.Scope>) =>
  Effect.gen(function* () {
    const accounts = yield* Accounts.Accounts
    const { account } = yield* accounts.create({ name: `chat-${randomUUID().slice(0, 8)}`, credits: Money.micros(credits) })
    const key = yield* accounts.createKey(account.id, scopes === undefined ? {} : { scopes })
    const openai = new OpenAI({ apiKey: key.secret, baseURL: `${yield* baseUrl}/api/v1`, maxRetries: 0 })
    return { accountId: account.id, secret: key.secret, openai } satisfies Customer
  })

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly body: any
}

/** A plain HTTP call to the server as `who` (or without credentials). */
export const call = (path: string, who?: Customer, init: RequestInit = {}) =>
  Effect.flatMap(baseUrl, (base) =>
    Effect.promise(async (): Promise<Reply> => {
      const response = await fetch(`${base}${path}`, {
        ...init,
        headers: { ...(who === undefined ? {} : { authorization: `Bearer ${who.secret}` }), ...init.headers }
      })
      const text = await response.text()
      let body: unknown = text
      try {
        body = JSON.parse(text)
      } catch {
        // Not JSON: keep the text.
      }
      return { status: response.status, headers: response.headers, body }
    })
  )

/**
 * The customer's balances and ledger entries, through GET /api/v1/usage, once the server has
 * written its settled requests and closed its idle credit lease (nothing reserved).
 */
export const usage = (who: Customer) =>
  eventually(
    Effect.map(call("/api/v1/usage?limit=100", who), (reply) => reply.body),
    (body) => body.reservedMicros === 0
  )

/** The ledger entries of one chat request: [kind, amount], oldest first. */
export const movements = (who: Customer, chatRequestId: string) =>
  Effect.map(usage(who), (body) =>
    (body.entries as ReadonlyArray<{ kind: string; amountMicros: number; chatRequestId: string | null }>)
      .filter((entry) => entry.chatRequestId === chatRequestId)
      .map((entry) => [entry.kind, entry.amountMicros] as const)
      .reverse()
  )

/** The chat request as GET /api/v1/chat/requests/{id} shows it. */
export const request = (who: Customer, id: string) => Effect.map(call(`/api/v1/chat/requests/${id}`, who), (r) => r.body)

/** Waits (real time) until `check` holds, for effects of a disconnect that land after the client gave up. */
export const eventually = <A>(effect: Effect.Effect<A, never, any>, check: (a: A) => boolean, timeoutMs = 5000) =>
  Effect.gen(function* () {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const value = yield* effect
      if (check(value) || Date.now() > deadline) return value
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 25)))
    }
  })
