/**
 * The API served over real HTTP on an ephemeral port of 127.0.0.1, on the real kernel over a
 * given store, with helpers that act as the operator (accounts, keys, credits) and as the worker
 * (a succeeded task with a result file), and an `Outage` switch that makes chosen store ports
 * unreachable.
 */
import { randomUUID } from "node:crypto"
import { Context, Effect, Layer, Redacted, Ref } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import type { IpNetwork } from "effect/net"
import { OAuthStore } from "@taskmeter/mcp"
import {
  AccountContacts,
  AccountStore,
  Accounts,
  BlobStore,
  BudgetStore,
  Catalog,
  Ledger,
  LedgerStore,
  Mailer,
  MediaStore,
  MediaUrls,
  Money,
  PasskeyStore,
  Pricer,
  ResultUrls,
  Retention,
  SessionStore,
  StoreError,
  StoreHealth,
  TaskRunner,
  TaskStore,
  UserStore,
  WebhookEndpoints,
  WebhookStore
} from "@taskmeter/kernel"
import type { Ids, Task } from "@taskmeter/kernel"
import { ConsoleAuth, EventStream, Server, ServerConfig } from "../../src/index.ts"

export type Stores =
  | AccountStore.AccountStore
  | LedgerStore.LedgerStore
  | TaskStore.TaskStore
  | MediaStore.MediaStore
  | BlobStore.BlobStore
  | BudgetStore.BudgetStore
  | UserStore.UserStore
  | SessionStore.SessionStore
  | PasskeyStore.PasskeyStore
  | StoreHealth.StoreHealth
  | WebhookStore.WebhookStore

/** A store implementation the suites run against. */
export interface StoreUnderTest {
  readonly name: string
  /** A fresh store each call. */
  readonly layer: () => Layer.Layer<Stores, unknown>
}

/** A model with a flat price and one required field. */
export const MODEL = "alpha-2-lite-text-to-image-economy"
export const MODEL_PRICE = 25_000
export const INPUT = { prompt: "a lighthouse at dusk" }
/** A model taking media (imageUrls). */
export const MEDIA_MODEL = "alpha-2-lite-image-to-image-economy"
/** A model no worker serves in these tests. */
export const UNSERVED_MODEL = "song-lyrics"

export type Port = "accounts" | "tasks" | "ledger" | "media"

/** What the server signs and checks media links with (as PUBLIC_URL and MEDIA_LINK_SECRET would set). */
export const MEDIA_LINKS = {
  baseUrl: "https://taskmeter.test",
  secret: Redacted.make("a media-link secret of the http suites, at least 32 characters")
} satisfies MediaUrls.Options

/** The secret before a rotation (MEDIA_LINK_SECRET_PREVIOUS): its links are still taken. */
export const PREVIOUS_LINK_SECRET = Redacted.make("the media-link secret these suites had before a rotation")

/** The signers of media links and result links, both on MEDIA_LINKS's secret (and the previous one) as main.ts has them. */
export const signedLinks = Layer.merge(
  MediaUrls.layer({ ...MEDIA_LINKS, previousSecret: PREVIOUS_LINK_SECRET }),
  ResultUrls.layer({ secret: MEDIA_LINKS.secret, previousSecret: PREVIOUS_LINK_SECRET })
)

/** The store ports currently unreachable. */
export class Outage extends Context.Service<Outage, Ref.Ref<ReadonlySet<Port>>>()("test/Outage") {}

const down = (port: Port) => new StoreError.StoreUnavailable({ message: `test outage of the ${port} store` })

/**
 * Wraps every method of a store so that it fails while its port is in the outage set, or one of
 * the other ports `alsoNeeds` lists for that method's call.
 */
const guarded = <S extends object>(
  service: S,
  port: Port,
  outage: Ref.Ref<ReadonlySet<Port>>,
  alsoNeeds: { readonly [K in keyof S]?: (...args: Array<any>) => ReadonlyArray<Port> } = {}
): S =>
  Object.fromEntries(
    Object.entries(service).map(([name, member]) => {
      const needs = (args: Array<unknown>) => [port, ...(alsoNeeds[name as keyof S]?.(...args) ?? [])]
      const guard = (effect: Effect.Effect<unknown, unknown>, needed = needs([])) =>
        Effect.flatMap(Ref.get(outage), (ports) => {
          const unreachable = needed.find((each) => ports.has(each))
          return unreachable === undefined ? effect : Effect.fail(down(unreachable))
        })
      return [
        name,
        typeof member === "function"
          ? (...args: Array<unknown>) => guard(member(...args), needs(args))
          : Effect.isEffect(member)
            ? guard(member as Effect.Effect<unknown, unknown>)
            : member
      ]
    })
  ) as S

const withOutage = Layer.effectContext(
  Effect.gen(function* () {
    const outage = yield* Ref.make<ReadonlySet<Port>>(new Set())
    const accounts = yield* AccountStore.AccountStore
    const ledger = yield* LedgerStore.LedgerStore
    const tasks = yield* TaskStore.TaskStore
    const media = yield* MediaStore.MediaStore
    const blobs = yield* BlobStore.BlobStore
    const budgets = yield* BudgetStore.BudgetStore
    const health = yield* StoreHealth.StoreHealth
    const users = yield* UserStore.UserStore
    const sessions = yield* SessionStore.SessionStore
    const passkeys = yield* PasskeyStore.PasskeyStore
    const webhooks = yield* WebhookStore.WebhookStore
    return Context.make(Outage, outage).pipe(
      Context.add(PasskeyStore.PasskeyStore, passkeys),
      Context.add(UserStore.UserStore, users),
      Context.add(SessionStore.SessionStore, sessions),
      Context.add(StoreHealth.StoreHealth, health),
      Context.add(AccountStore.AccountStore, guarded(accounts, "accounts", outage)),
      Context.add(LedgerStore.LedgerStore, guarded(ledger, "ledger", outage)),
      // A key's admission authenticates the key too: that call needs the account store as well.
      Context.add(
        TaskStore.TaskStore,
        guarded(tasks, "tasks", outage, {
          admit: (request: TaskStore.AnyAdmissionRequest) => (TaskStore.isKeyed(request) ? ["accounts"] : [])
        })
      ),
      Context.add(MediaStore.MediaStore, guarded(media, "media", outage)),
      Context.add(BlobStore.BlobStore, blobs),
      Context.add(BudgetStore.BudgetStore, budgets),
      Context.add(WebhookStore.WebhookStore, webhooks)
    )
  })
)

/** Makes the given store ports unreachable (or, with none, reachable again). */
export const setOutage = (...ports: Array<Port>) =>
  Effect.gen(function* () {
    yield* Ref.set(yield* Outage, new Set(ports))
  })

export interface Options {
  readonly runner?: Partial<TaskRunner.Options>
  readonly maxUploadBytes?: number
  readonly eventStreams?: EventStream.Settings
  /** Routes mounted beside the API, as another package would. */
  readonly beside?: Layer.Layer<never, never, HttpRouter.HttpRouter | HttpRouter.Request<"Error", unknown>>
  /** The console's users and sessions; default: open sign-up, no starting credits, the default lifetimes. */
  readonly consoleAuth?: Partial<ConsoleAuth.Options>
  /** Where the console's mail goes; default: a fresh memory mailer (or `mailer`, when given). */
  readonly mail?: Mailer.MemoryMailer
  readonly mailer?: Layer.Layer<Mailer.Mailer>
  /** The port on 127.0.0.1; default 0, an ephemeral one. */
  readonly port?: number
  /** Proxies whose X-Forwarded-For the server believes (TRUSTED_PROXIES); default none. */
  readonly trustedProxies?: ReadonlyArray<IpNetwork.IpNetwork>
}

/** The public base URL the console's settings name in the http suites. */
export const PUBLIC_BASE_URL = "http://taskmeter.test"

/** The console's users and sessions over `mail` (open sign-up unless `options` say otherwise), and that mailer. */
export const consoleAuth = (
  options: Partial<ConsoleAuth.Options> = {},
  mailer: Layer.Layer<Mailer.Mailer> = Mailer.layerMemory()
) =>
  ConsoleAuth.layer({
    publicBaseUrl: PUBLIC_BASE_URL,
    signUp: "open",
    signUpCreditsMicros: Money.micros(0),
    ...options
  }).pipe(Layer.provideMerge(mailer))

/** The served API and everything a test needs around it. */
export const layer = (store: StoreUnderTest, options: Options = {}) => {
  const kernel = Layer.mergeAll(
    TaskRunner.layer({ executorAvailable: (model) => model !== UNSERVED_MODEL, ...options.runner }).pipe(
      Layer.provideMerge(Accounts.layer({ defaultRateLimitPerMinute: 10_000 }))
    ),
    Ledger.layer,
    consoleAuth(options.consoleAuth, options.mailer ?? Mailer.layerMemory(options.mail)),
    WebhookEndpoints.layer(),
    AccountContacts.fromUsers
  ).pipe(
    Layer.provideMerge(Pricer.layerDefault),
    Layer.provideMerge(Layer.merge(Catalog.layer, signedLinks)),
    Layer.provideMerge(withOutage.pipe(Layer.provide(store.layer())))
  )
  const app = options.beside === undefined ? Server.layer : Layer.mergeAll(Server.layer, options.beside)
  return Server.serve(app, { disableLogger: true, disableListenLog: true, trustedProxies: options.trustedProxies }).pipe(
    Layer.provideMerge(kernel),
    Layer.provideMerge(OAuthStore.layerMemory),
    Layer.provide(options.eventStreams === undefined ? Layer.empty : Layer.succeed(EventStream.Settings, options.eventStreams)),
    Layer.provide(ServerConfig.layerWith({ port: options.port ?? 0, maxUploadBytes: options.maxUploadBytes ?? 64 * 1024 })),
    Layer.orDie
  )
}

/** http://127.0.0.1:<port> of the server under test. */
export const baseUrl = Effect.gen(function* () {
  const { address } = yield* HttpServer.HttpServer
  if (address._tag === "UnixPathAddress") return yield* Effect.die("the server should listen on TCP")
  return `http://127.0.0.1:${address.port}`
})

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  /** The body parsed as JSON (undefined when it is not JSON). */
  readonly body: any
}

/** Sends a request to the server under test. */
export const call = (path: string, init: RequestInit = {}) =>
  Effect.flatMap(baseUrl, (base) =>
    Effect.promise(async (): Promise<Reply> => {
      const response = await fetch(`${base}${path}`, init)
      const text = await response.text()
      let body: unknown
      try {
        body = JSON.parse(text)
      } catch {
        body = undefined
      }
      return { status: response.status, headers: response.headers, text, body }
    })
  )

export const bearer = (secret: string): Record<string, string> => ({ authorization: `Bearer ${secret}` })

export interface Customer {
  readonly accountId: Ids.AccountId
  readonly keyId: Ids.ApiKeyId
  readonly secret: string
}

/** A new account holding `credits` micros, with a key made with `keyOptions`. */
export const customer = (credits = 10_000_000, keyOptions: Accounts.KeyOptions = {}) =>
  Effect.gen(function* () {
    const accounts = yield* Accounts.Accounts
    const { account } = yield* accounts.create({ name: `acme-${randomUUID().slice(0, 8)}`, credits: Money.micros(credits) })
    const key = yield* accounts.createKey(account.id, keyOptions)
    return { accountId: account.id, keyId: key.record.id, secret: key.secret } satisfies Customer
  })

/** POST /api/v1/jobs as `who`. */
export const submit = (
  who: Customer,
  body: unknown = { model: MODEL, input: INPUT },
  /** null sends no Idempotency-Key. */
  idempotencyKey: string | null = randomUUID()
) =>
  call("/api/v1/jobs", {
    method: "POST",
    headers: {
      ...bearer(who.secret),
      "content-type": "application/json",
      ...(idempotencyKey === null ? {} : { "idempotency-key": idempotencyKey })
    },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })

export const usage = (who: Customer, query = "") => call(`/api/v1/usage${query}`, { headers: bearer(who.secret) })

async function* chunksOf(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes
}

/**
 * Plays the worker: claims the task and makes it succeed with one image result holding `bytes`
 * (written to the BlobStore and the MediaStore), its file stored at `storedAt` (default now) and
 * expiring after the default retention from then. The result's id, hash and expiry.
 */
export const succeedWithResult = (
  who: Customer,
  taskId: string,
  bytes: Uint8Array,
  contentType = "image/png",
  storedAt = new Date()
) =>
  Effect.gen(function* () {
    const tasks = yield* TaskStore.TaskStore
    const media = yield* MediaStore.MediaStore
    const blobs = yield* BlobStore.BlobStore
    const now = new Date()
    const claims = yield* tasks.claim({ workerId: "test-worker", limit: 1000, leaseMs: 60_000, now })
    const claim = claims.find((candidate) => candidate.task.id === taskId)
    if (claim === undefined) throw new Error(`task ${taskId} is not claimable`)
    const resultId = randomUUID() as Ids.ResultId
    const blobKey = `results/${resultId}`
    const written = yield* blobs.put(blobKey, chunksOf(bytes), { maxBytes: bytes.byteLength })
    const expiresAt = yield* media.putResult({
      id: resultId,
      accountId: who.accountId,
      taskId: claim.task.id,
      contentType,
      sizeBytes: written.sizeBytes,
      sha256: written.sha256,
      blobKey,
      createdAt: storedAt,
      expiresAt: Retention.expiresAt(storedAt, Retention.DEFAULT_DAYS)
    })
    const base = { taskId: claim.task.id, leaseToken: claim.leaseToken, now }
    yield* tasks.transition({ ...base, from: "queued", to: "submitting", keepLease: true })
    const done = yield* tasks.transition({
      ...base,
      from: "submitting",
      to: "succeeded",
      keepLease: false,
      chargeMicros: claim.task.priceMicros,
      assets: [{ id: "asset-1", type: "image", resultId, mimeType: contentType, expiresAt: expiresAt.toISOString() }]
    })
    if (done._tag !== "Done") throw new Error(`transition failed: ${done._tag}`)
    return { resultId, sha256: written.sha256, expiresAt }
  })

/** The asset urls of a task as the API returns it. */
export const assetUrls = (task: Task.Task): Array<string> => task.assets.flatMap((asset) => asset.url ?? [])

/** A small valid PNG (1x1, transparent). */
export const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
  "base64"
)

/** Fetches a path as a client holding no API key does (a signed link); the body as bytes. */
export const fetchBytes = (pathAndQuery: string, init: RequestInit = {}) =>
  Effect.flatMap(baseUrl, (base) =>
    Effect.promise(async () => {
      const response = await fetch(`${base}${pathAndQuery}`, init)
      const bytes = Buffer.from(await response.arrayBuffer())
      return { status: response.status, headers: response.headers, bytes }
    })
  )

/** A path and query with one query parameter replaced (to tamper with a signed link). */
export const withQueryParam = (pathAndQuery: string, name: string, value: string): string => {
  const url = new URL(pathAndQuery, "http://x")
  url.searchParams.set(name, value)
  return `${url.pathname}${url.search}`
}

/**
 * A signed link altered each way a client could try without the secret: a flipped signature,
 * a later expiry, another account, the query dropped. Each must be refused.
 */
export const alterationsOf = (link: string, otherAccountId: string): ReadonlyArray<string> => {
  const query = new URL(link, "http://x").searchParams
  const sig = query.get("sig")!
  return [
    withQueryParam(link, "sig", `${sig.slice(0, -1)}${sig.endsWith("A") ? "B" : "A"}`),
    withQueryParam(link, "exp", String(Number(query.get("exp")) + 3_600)),
    withQueryParam(link, "acct", otherAccountId),
    link.split("?")[0]!
  ]
}
