/**
 * The composition root of `npm start` (and `taskmeter start`, `taskmeter worker`): storage, kernel
 * services, the HTTP server with the admin service, chat, the MCP endpoint and in-process
 * workers, configured from the environment. Wiring only; every rule lives in the kernel and the
 * route modules. The settings: packages/http/README.md; the executors: `Providers.scoped`.
 */
import { createHmac } from "node:crypto"
import { access } from "node:fs/promises"
import { join, resolve as resolvePath } from "node:path"
import { Config, Console, Data, Duration, Effect, Layer, Option, Redacted, Result, Schema } from "effect"
import { HttpServer } from "effect/http"
import { IpNetwork, NetAddress } from "effect/net"
import {
  AccountContacts,
  Accounts,
  BlobStore,
  CallbackUrls,
  Catalog,
  Executors,
  Heartbeat,
  Housekeeping,
  Ledger,
  MediaUrls,
  Pricer,
  Money,
  Provider,
  ResultUrls,
  Retention,
  Sessions,
  TaskRunner,
  TaskWorker,
  WebhookDelivery,
  WebhookEndpoints,
  ZeroPriced
} from "@taskmeter/kernel"
import type { Users } from "@taskmeter/kernel"
import { WebConsole } from "@taskmeter/console"
import { AuthorizeLimit, McpEndpoint, OAuthStorePg, RegistrationLimit, TransportGuard } from "@taskmeter/mcp"
import { Providers } from "@taskmeter/providers"
import { PgStore } from "@taskmeter/storage-pg"
import { S3Settings, S3Store, StartupCheck } from "@taskmeter/storage-s3"
import * as AdminFile from "./admin/AdminFile.ts"
import * as AdminServer from "./admin/AdminServer.ts"
import * as OperatorServer from "./admin/OperatorServer.ts"
import * as BillingServer from "./billing/BillingServer.ts"
import * as PaymentsConfig from "./billing/PaymentsConfig.ts"
import * as OperatorToken from "./admin/OperatorToken.ts"
import * as ChatServer from "./chat/ChatServer.ts"
import * as ChatServices from "./chat/ChatServices.ts"
import * as ConsoleAuth from "./ConsoleAuth.ts"
import * as OutboxMailer from "./mail/OutboxMailer.ts"
import * as SmtpMailer from "./mail/SmtpMailer.ts"
import * as DataDir from "./DataDir.ts"
import * as GcSettings from "./GcSettings.ts"
import * as EventStream from "./EventStream.ts"
import * as PresignedDownloads from "./handlers/PresignedDownloads.ts"
import * as Logging from "./observability/Logging.ts"
import * as Tracing from "./observability/Tracing.ts"
import * as WorkerListener from "./observability/WorkerListener.ts"
import * as Server from "./Server.ts"
import * as ApiReference from "./docs/ApiReference.ts"
import { PublicUrl } from "./PublicUrl.ts"
import * as ServerConfig from "./ServerConfig.ts"

export interface Settings {
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly databaseSchema: Option.Option<string>
  readonly operatorToken: Option.Option<Redacted.Redacted<string>>
  readonly publicUrl: Option.Option<string>
  readonly mediaLinkSecret: Option.Option<Redacted.Redacted<string>>
  /** MEDIA_LINK_SECRET_PREVIOUS: links it signed are still accepted (a rotation), none are signed with it. */
  readonly mediaLinkSecretPrevious: Option.Option<Redacted.Redacted<string>>
  readonly resultLinkTtlSeconds: number
  /** RESULT_RETENTION: days results are kept unless the account has its own (`taskmeter admin account retention`). */
  readonly resultRetentionDays: number
  /** PROVIDER_CALLBACKS: send upstreams a per-task callback URL under PUBLIC_URL (CallbackUrls). */
  readonly providerCallbacks: boolean
  readonly submissionsPerMinute: number
  readonly maxUnfinishedTasks: number
  /** MAX_WAITS_PER_PROCESS: Prefer: wait (and MCP wait_for_task) calls held at once by this process. */
  readonly maxWaitsPerProcess: number
  /**
   * SSE_MAX_STREAMS_PER_ACCOUNT: event streams of one account open at once, counted across every
   * process sharing the database (TaskStore.holdStream).
   */
  readonly sseMaxStreamsPerAccount: number
  /** SSE_STREAM_LEASE_SECONDS: how long a crashed process's event streams still count against their accounts. */
  readonly sseStreamLeaseSeconds: number
  /** SSE_HEARTBEAT_SECONDS: a comment line this often on a quiet event stream. */
  readonly sseHeartbeatSeconds: number
  readonly keyRateLimitPerMinute: number
  /** KEY_CACHE_TTL_MS: how long the chat routes serve an API key verified in the store (0: always ask the store). */
  readonly keyCacheTtlMs: number
  readonly workers: boolean
  /** MCP_REGISTRATIONS_PER_HOUR: MCP client registrations per source address (or IPv6 /64). */
  readonly mcpRegistrationsPerHour: number
  /** MCP_REGISTRATIONS_PER_HOUR_TOTAL: MCP client registrations from all sources together. */
  readonly mcpRegistrationsPerHourTotal: number
  /** TRUSTED_PROXIES: networks of the reverse proxies whose X-Forwarded-For is believed. */
  readonly trustedProxies: ReadonlyArray<IpNetwork.IpNetwork>
  /** MCP_ALLOWED_ORIGINS: browser origins besides the public one that /mcp answers. */
  readonly mcpAllowedOrigins: ReadonlyArray<string>
  /** MCP_ALLOWED_HOSTS: Host header values /mcp answers besides the public and bound ones (e.g. a proxy's upstream name). */
  readonly mcpAllowedHosts: ReadonlyArray<string>
  /** MCP_AUTHORIZATIONS_PER_MINUTE: /authorize requests per client address (or IPv6 /64) per minute. */
  readonly mcpAuthorizationsPerMinute: number
  /** MCP_SIGN_IN_MAX_DAYS: how long an MCP sign-in lasts at most, however often its tokens are refreshed. */
  readonly mcpSignInMaxDays: number
  /** S3_BUCKET and the other S3_ settings: blobs in that bucket; none: under DATA_DIR/blobs. */
  readonly s3: Option.Option<S3Settings.S3Settings>
  /** SIMULATED_PRICE: what a task the simulated provider runs costs, the price list's price or nothing. */
  readonly simulatedPrice: "list" | "zero"
  /** MODEL_CONCURRENCY: per model, tasks under way at once across every worker on the store. */
  readonly modelConcurrency: { readonly [model: string]: number }
  /** MODEL_DEADLINE_SECONDS: per model, how long a task may take from admission, replacing its category's. */
  readonly modelDeadlineSeconds: { readonly [model: string]: number }
  /** LOG_FORMAT: `json` (one object per line) or `text` (logfmt, for a terminal). */
  readonly logFormat: Logging.Format
  /** ACCESS_LOG: one log line per HTTP request. */
  readonly accessLog: boolean
  /** METRICS_TOKEN: the bearer token GET /metrics on the admin listener asks for; none: open there. */
  readonly metricsToken: Option.Option<Redacted.Redacted<string>>
  /** WORKER_METRICS_PORT: a `taskmeter worker` process serves /metrics, /healthz and /readyz here; none: no listener. */
  readonly workerMetricsPort: Option.Option<number>
  /** WORKER_METRICS_HOST: the interface of that listener. */
  readonly workerMetricsHost: string
  /** SIGNUP: who may sign up in the console: `open` (anyone) or `invite` (`taskmeter admin invite`). */
  readonly signUp: Users.SignUpPolicy
  /** SIGNUP_CREDITS_MICROS: starting credits of an account made at sign-up (a ledger grant). */
  readonly signUpCreditsMicros: number
  /** SESSION_IDLE_TIMEOUT_MS: a console session unused this long ends. */
  readonly sessionIdleTimeoutMs: number
  /** SESSION_MAX_AGE_MS: a console session ends this long after sign-in. */
  readonly sessionMaxAgeMs: number
  /** SMTP_URL: mail goes out through this SMTP server; none: logged and written under DATA_DIR/mail. */
  readonly smtpUrl: Option.Option<Redacted.Redacted<string>>
  /** MAIL_FROM: the sender of the service's mail. */
  readonly mailFrom: string
  /** WEBHOOK_DISABLE_AFTER: a webhook endpoint failing every delivery this long is disabled (and its account told). */
  readonly webhookDisableAfter: Duration.Duration
  /** WEBHOOK_LOG_RETENTION: webhook deliveries finished this long ago are purged with their attempts. */
  readonly webhookLogRetention: Duration.Duration
}

/** The settings when nothing is configured. */
export const defaults: Settings = {
  databaseUrl: Option.none(),
  databaseSchema: Option.none(),
  operatorToken: Option.none(),
  publicUrl: Option.none(),
  mediaLinkSecret: Option.none(),
  mediaLinkSecretPrevious: Option.none(),
  resultLinkTtlSeconds: ResultUrls.DEFAULT_TTL_MS / 1000,
  resultRetentionDays: Retention.DEFAULT_DAYS,
  providerCallbacks: false,
  submissionsPerMinute: 60,
  maxUnfinishedTasks: 10,
  maxWaitsPerProcess: 1000,
  sseMaxStreamsPerAccount: 100,
  sseStreamLeaseSeconds: 30,
  sseHeartbeatSeconds: 15,
  keyRateLimitPerMinute: Accounts.defaultOptions.defaultRateLimitPerMinute,
  keyCacheTtlMs: Accounts.defaultOptions.keyCacheTtlMs,
  workers: true,
  mcpRegistrationsPerHour: RegistrationLimit.defaults.perSource,
  mcpRegistrationsPerHourTotal: RegistrationLimit.defaults.total,
  trustedProxies: [],
  mcpAllowedOrigins: [],
  mcpAllowedHosts: [],
  mcpAuthorizationsPerMinute: AuthorizeLimit.defaults.perSource,
  mcpSignInMaxDays: 90,
  s3: Option.none(),
  simulatedPrice: "list",
  modelConcurrency: {},
  modelDeadlineSeconds: {},
  logFormat: "text",
  accessLog: true,
  metricsToken: Option.none(),
  workerMetricsPort: Option.none(),
  workerMetricsHost: "127.0.0.1",
  signUp: "open",
  signUpCreditsMicros: 0,
  sessionIdleTimeoutMs: Sessions.defaultOptions.idleTimeoutMs,
  sessionMaxAgeMs: Sessions.defaultOptions.maxAgeMs,
  smtpUrl: Option.none(),
  mailFrom: "taskmeter <taskmeter@localhost>",
  webhookDisableAfter: Duration.millis(WebhookDelivery.DEFAULT_DISABLE_AFTER_MS),
  webhookLogRetention: Duration.millis(Housekeeping.defaults.webhookLogRetentionMs)
}

const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

const PortOrZero = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 65535 }))

const positive = (name: string, fallback: number) => Config.schema(PositiveInt, name).pipe(Config.withDefault(fallback))

/** A TRUSTED_PROXIES entry: a network in CIDR form, or a single address. */
const networkOf = (entry: string) =>
  IpNetwork.fromString(entry.includes("/") ? entry : `${entry}/${entry.includes(":") ? 128 : 32}`)

const entriesOf = (text: string): ReadonlyArray<string> =>
  text
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "")

/** `10.0.0.0/8, 192.168.1.7, ::1`: comma-separated networks or addresses. */
const TrustedProxies = Schema.String.check(
  Schema.makeFilter((text: string) => {
    const bad = entriesOf(text).find((entry) => Result.isFailure(networkOf(entry)))
    return bad === undefined || `${JSON.stringify(bad)} is not an IP address or network (write e.g. 10.0.0.0/8 or 192.168.1.7)`
  })
)

/** `https://app.example.com, http://localhost:5173`: comma-separated http(s) origins. */
const AllowedOrigins = Schema.String.check(
  Schema.makeFilter((text: string) => {
    const bad = entriesOf(text).find((entry) => Result.isFailure(Result.try(() => TransportGuard.normalizeOrigin(entry))))
    return bad === undefined || `${JSON.stringify(bad)} is not an http(s) origin (write e.g. https://app.example.com)`
  })
)

/** `taskmeter:8787, api.internal`: comma-separated host names or addresses, each with an optional port. */
const AllowedHosts = Schema.String.check(
  Schema.makeFilter((text: string) => {
    const bad = entriesOf(text).find((entry) => TransportGuard.normalizeHost(entry) === undefined)
    return bad === undefined || `${JSON.stringify(bad)} is not a host with an optional port (write e.g. taskmeter:8787)`
  })
)

const catalogSlugs = new Set(
  Effect.runSync(Catalog.Catalog.use((c) => Effect.succeed(c.models.map((m) => m.slug))).pipe(Effect.provide(Catalog.layer)))
)

/** `alpha-2-text-to-image-economy=2, song-lyrics=1`: comma-separated catalog models, each with a whole number of at least 1. */
const PerModel = Schema.String.check(
  Schema.makeFilter((text: string) => {
    for (const entry of entriesOf(text)) {
      const [slug = "", value = "", ...rest] = entry.split("=").map((part) => part.trim())
      if (rest.length > 0 || !/^[1-9][0-9]{0,8}$/.test(value)) {
        return `${JSON.stringify(entry)} is not <model>=<whole number of at least 1> (write e.g. song-lyrics=2)`
      }
      if (!catalogSlugs.has(slug)) return `${JSON.stringify(slug)} is not a model of the catalog (GET /api/v1/models lists them)`
    }
    return true
  })
)

const parsePerModel = (text: string): { readonly [model: string]: number } =>
  Object.fromEntries(
    entriesOf(text)
      .map((entry) => entry.split("=").map((part) => part.trim()))
      .map(([slug, value]) => [slug, Number(value)])
  )

const perModel = (name: string) => Config.schema(PerModel, name).pipe(Config.map(parsePerModel), Config.withDefault({}))

const parseNetworks = (text: string): ReadonlyArray<IpNetwork.IpNetwork> =>
  entriesOf(text).flatMap((entry) => Result.match(networkOf(entry), { onFailure: () => [], onSuccess: (network) => [network] }))

export const config: Config.Config<Settings> = Config.all({
  databaseUrl: Config.option(Config.Redacted("DATABASE_URL")),
  databaseSchema: Config.option(Config.NonEmptyString("DATABASE_SCHEMA")),
  operatorToken: Config.option(Config.Redacted("OPERATOR_TOKEN")),
  publicUrl: Config.option(Config.URL("PUBLIC_URL").pipe(Config.map((url) => url.href))),
  mediaLinkSecret: Config.option(Config.Redacted("MEDIA_LINK_SECRET")),
  mediaLinkSecretPrevious: Config.option(Config.Redacted("MEDIA_LINK_SECRET_PREVIOUS")),
  resultLinkTtlSeconds: positive("RESULT_LINK_TTL_SECONDS", defaults.resultLinkTtlSeconds),
  resultRetentionDays: positive("RESULT_RETENTION", defaults.resultRetentionDays),
  providerCallbacks: Config.Boolean("PROVIDER_CALLBACKS").pipe(Config.withDefault(defaults.providerCallbacks)),
  submissionsPerMinute: positive("SUBMISSIONS_PER_MINUTE", defaults.submissionsPerMinute),
  maxUnfinishedTasks: positive("MAX_UNFINISHED_TASKS", defaults.maxUnfinishedTasks),
  maxWaitsPerProcess: positive("MAX_WAITS_PER_PROCESS", defaults.maxWaitsPerProcess),
  sseMaxStreamsPerAccount: positive("SSE_MAX_STREAMS_PER_ACCOUNT", defaults.sseMaxStreamsPerAccount),
  sseStreamLeaseSeconds: positive("SSE_STREAM_LEASE_SECONDS", defaults.sseStreamLeaseSeconds),
  sseHeartbeatSeconds: positive("SSE_HEARTBEAT_SECONDS", defaults.sseHeartbeatSeconds),
  keyRateLimitPerMinute: positive("KEY_RATE_LIMIT_PER_MINUTE", defaults.keyRateLimitPerMinute),
  keyCacheTtlMs: Config.schema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 60_000 })), "KEY_CACHE_TTL_MS").pipe(
    Config.withDefault(defaults.keyCacheTtlMs)
  ),
  workers: Config.Boolean("WORKERS").pipe(Config.withDefault(defaults.workers)),
  mcpRegistrationsPerHour: positive("MCP_REGISTRATIONS_PER_HOUR", defaults.mcpRegistrationsPerHour),
  mcpRegistrationsPerHourTotal: positive("MCP_REGISTRATIONS_PER_HOUR_TOTAL", defaults.mcpRegistrationsPerHourTotal),
  trustedProxies: Config.schema(TrustedProxies, "TRUSTED_PROXIES").pipe(
    Config.map(parseNetworks),
    Config.withDefault(defaults.trustedProxies)
  ),
  mcpAllowedOrigins: Config.schema(AllowedOrigins, "MCP_ALLOWED_ORIGINS").pipe(
    Config.map((text) => entriesOf(text).map(TransportGuard.normalizeOrigin)),
    Config.withDefault(defaults.mcpAllowedOrigins)
  ),
  mcpAllowedHosts: Config.schema(AllowedHosts, "MCP_ALLOWED_HOSTS").pipe(
    Config.map(entriesOf),
    Config.withDefault(defaults.mcpAllowedHosts)
  ),
  mcpAuthorizationsPerMinute: positive("MCP_AUTHORIZATIONS_PER_MINUTE", defaults.mcpAuthorizationsPerMinute),
  mcpSignInMaxDays: positive("MCP_SIGN_IN_MAX_DAYS", defaults.mcpSignInMaxDays),
  s3: S3Settings.config,
  simulatedPrice: Config.schema(Schema.Literals(["list", "zero"]), "SIMULATED_PRICE").pipe(
    Config.withDefault(defaults.simulatedPrice)
  ),
  modelConcurrency: perModel("MODEL_CONCURRENCY"),
  modelDeadlineSeconds: perModel("MODEL_DEADLINE_SECONDS"),
  logFormat: Config.Literals(["json", "text"], "LOG_FORMAT").pipe(Config.withDefault(defaults.logFormat)),
  accessLog: Config.Boolean("ACCESS_LOG").pipe(Config.withDefault(defaults.accessLog)),
  metricsToken: Config.option(Config.Redacted("METRICS_TOKEN")),
  workerMetricsPort: Config.option(Config.schema(PortOrZero, "WORKER_METRICS_PORT")),
  workerMetricsHost: Config.NonEmptyString("WORKER_METRICS_HOST").pipe(Config.withDefault(defaults.workerMetricsHost)),
  signUp: Config.Literals(["open", "invite"], "SIGNUP").pipe(Config.withDefault(defaults.signUp)),
  signUpCreditsMicros: Config.schema(
    Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1_000_000_000_000 })),
    "SIGNUP_CREDITS_MICROS"
  ).pipe(Config.withDefault(defaults.signUpCreditsMicros)),
  sessionIdleTimeoutMs: positive("SESSION_IDLE_TIMEOUT_MS", defaults.sessionIdleTimeoutMs),
  sessionMaxAgeMs: positive("SESSION_MAX_AGE_MS", defaults.sessionMaxAgeMs),
  smtpUrl: Config.option(Config.Redacted("SMTP_URL")),
  mailFrom: Config.NonEmptyString("MAIL_FROM").pipe(Config.withDefault(defaults.mailFrom)),
  webhookDisableAfter: Config.Duration("WEBHOOK_DISABLE_AFTER").pipe(Config.withDefault(defaults.webhookDisableAfter)),
  webhookLogRetention: Config.Duration("WEBHOOK_LOG_RETENTION").pipe(Config.withDefault(defaults.webhookLogRetention))
})

/**
 * What a process's workers run: the task worker (with the reconciler and housekeeping) and the
 * webhook deliveries, whose notices go to the account's users (AccountContacts) by the process's Mailer.
 */
const serveWorkers = (settings: Pick<Settings, "webhookDisableAfter" | "webhookLogRetention">) =>
  Effect.raceAllFirst([
    TaskWorker.serve({ housekeeping: { webhookLogRetentionMs: Duration.toMillis(settings.webhookLogRetention) } }),
    WebhookDelivery.run({ disableAfterMs: Duration.toMillis(settings.webhookDisableAfter) }).pipe(
      Effect.provide(AccountContacts.fromUsers)
    )
  ])

/**
 * Blobs in the S3 bucket of `settings.s3` (checked at start; with presigned downloads, the
 * PresignedDownloads service too), else as files in `<dataDir>/blobs`.
 */
export const blobStorage = (
  dataDir: string,
  settings: Pick<Settings, "s3" | "resultLinkTtlSeconds">
): Layer.Layer<BlobStore.BlobStore, StartupCheck.S3NotReady> =>
  Option.match(settings.s3, {
    onNone: () => BlobStore.layerFileSystem(join(dataDir, "blobs")),
    onSome: (s3) =>
      s3.presignedDownloads
        ? PresignedDownloads.layer(settings.resultLinkTtlSeconds).pipe(Layer.provideMerge(S3Store.layer(s3)))
        : S3Store.layer(s3)
  })

/**
 * PostgreSQL at DATABASE_URL, else PGlite with its files in `<dataDir>/pg`; blobs as
 * `blobStorage` keeps them. The database's SqlClient is provided too, for `serverStorage`.
 */
export const storage = (
  dataDir: string,
  settings: Pick<Settings, "databaseUrl" | "databaseSchema" | "s3" | "resultLinkTtlSeconds"> &
    Partial<Pick<Settings, "sseStreamLeaseSeconds">>
) =>
  Layer.merge(
    Option.match(settings.databaseUrl, {
      onNone: () => PgStore.layerEmbedded({ dataDir, schema: Option.getOrUndefined(settings.databaseSchema) }),
      onSome: (url) =>
        PgStore.layer({
          url,
          schema: Option.getOrUndefined(settings.databaseSchema),
          streamLeaseMs: (settings.sseStreamLeaseSeconds ?? defaults.sseStreamLeaseSeconds) * 1000
        })
    }),
    blobStorage(dataDir, settings)
  )

/**
 * What `server` keeps its data in: `storage`, and the MCP sign-in records (OAuthStorePg) in
 * the same database over the same client (PGlite's one connection included).
 */
export const serverStorage = (
  dataDir: string,
  settings: Pick<Settings, "databaseUrl" | "databaseSchema" | "s3" | "resultLinkTtlSeconds"> &
    Partial<Pick<Settings, "sseStreamLeaseSeconds">>
) => OAuthStorePg.layer.pipe(Layer.provideMerge(storage(dataDir, settings)))

/**
 * The media-link secret: configured, or derived from the operator token, so that every process
 * started with the same token (or the same data directory) signs and checks links alike.
 * Result links are signed with a key ResultUrls derives from it.
 */
export const mediaLinkSecret = (settings: Settings, token: Redacted.Redacted<string>): Redacted.Redacted<string> =>
  Option.getOrElse(settings.mediaLinkSecret, () =>
    Redacted.make(createHmac("sha256", Redacted.value(token)).update("taskmeter media links").digest("base64url"))
  )

/**
 * Where releases before the price list moved into the database kept the operator's price
 * changes. Only read, as the seed: see `kernel`.
 */
export const pricesFileOf = (dataDir: string): string => join(dataDir, "prices.json")

const exists = (path: string) =>
  Effect.promise(() =>
    access(path).then(
      () => true,
      () => false
    )
  )

/**
 * The executors of `adapters` with MODEL_CONCURRENCY's limits, held across processes through the
 * store's slots; a limit for a model no adapter here serves has nothing to bound and is left out.
 */
export const executorsOf = (adapters: ReadonlyArray<Provider.ProviderV1>, settings: Pick<Settings, "modelConcurrency">) => {
  const served = new Set(adapters.flatMap((adapter) => adapter.models))
  return Executors.make({
    adapters,
    modelConcurrency: Object.fromEntries(Object.entries(settings.modelConcurrency).filter(([model]) => served.has(model)))
  })
}

/** The list a database without one starts from: the one an existing install saved, else the shipped defaults. */
const seedOf = (pricesFile: string) =>
  Effect.flatMap(exists(pricesFile), (saved) => (saved ? Pricer.readList(pricesFile) : Effect.succeed(Pricer.defaultList)))

/** Per-task callback URLs when PROVIDER_CALLBACKS is on, signed under the media links' secret. */
const callbackUrls = (settings: Settings, mediaUrls: MediaUrls.Options) =>
  settings.providerCallbacks
    ? CallbackUrls.layer({ baseUrl: mediaUrls.baseUrl, secret: mediaUrls.secret, previousSecret: mediaUrls.previousSecret })
    : Layer.empty

export interface KernelOptions {
  readonly settings: Settings
  /** Executors in order of preference; the first that lists a model runs it. */
  readonly adapters: ReadonlyArray<Provider.ProviderV1>
  readonly mediaUrls: MediaUrls.Options
  /** A price list file (`pricesFileOf(dataDir)`) adopted as version 1 when the database has none. */
  readonly pricesFile: string
}

/**
 * The kernel's services over the storage ports. The Pricer keeps the price list in the
 * database (PriceStore), so that every process sharing it quotes alike; a database without
 * one gets `pricesFile` if it exists (an install upgraded from the file), else the shipped
 * defaults, as its first version.
 */
export const kernel = (options: KernelOptions) => {
  const { settings } = options
  const executors = executorsOf(options.adapters, settings)
  // Under SIMULATED_PRICE=zero, the models the simulator runs here are quoted (and listed) at zero.
  const free = new Set(
    settings.simulatedPrice === "zero"
      ? executors.models.filter((model) => executors.adapterFor(model)?.provider === Provider.SIMULATED)
      : []
  )
  const base = Layer.mergeAll(
    Catalog.layer,
    Layer.succeed(Executors.Executors, executors),
    MediaUrls.layer(options.mediaUrls),
    callbackUrls(settings, options.mediaUrls),
    Retention.layer(settings.resultRetentionDays),
    ResultUrls.layer({
      secret: options.mediaUrls.secret,
      previousSecret: options.mediaUrls.previousSecret,
      ttlMs: settings.resultLinkTtlSeconds * 1000
    })
  )
  return Layer.mergeAll(
    Ledger.layer,
    WebhookEndpoints.layer(),
    TaskRunner.layer({
      submissionsPerMinute: settings.submissionsPerMinute,
      maxUnfinishedTasks: settings.maxUnfinishedTasks,
      maxWaits: settings.maxWaitsPerProcess,
      maxStreamsPerAccount: settings.sseMaxStreamsPerAccount,
      executorAvailable: executors.executorAvailable,
      modelDeadlines: Object.fromEntries(
        Object.entries(settings.modelDeadlineSeconds).map(([model, seconds]) => [model, Duration.seconds(seconds)])
      )
    }).pipe(
      Layer.provideMerge(
        Accounts.layer({
          defaultRateLimitPerMinute: settings.keyRateLimitPerMinute,
          keyCacheTtlMs: settings.keyCacheTtlMs
        })
      )
    )
  ).pipe(
    Layer.provideMerge(ZeroPriced.layer(free).pipe(Layer.provide(Pricer.layerStore({ seed: seedOf(options.pricesFile) })))),
    Layer.provideMerge(base)
  )
}

/** SMTP at SMTP_URL, else the log and `<dataDir>/mail` (OutboxMailer). */
export const mailer = (dataDir: string, settings: Pick<Settings, "smtpUrl" | "mailFrom">) =>
  Option.match(settings.smtpUrl, {
    onNone: () => OutboxMailer.layer({ dataDir, from: settings.mailFrom }),
    onSome: (url) => SmtpMailer.layer({ url, from: settings.mailFrom })
  })

/** The console's users and sessions (ConsoleAuth) with the settings' policy, and the `mailer` they (and the workers) send through. */
export const consoleAuth = (dataDir: string, settings: Settings, publicUrl: string) =>
  ConsoleAuth.layer({
    publicBaseUrl: publicUrl,
    signUp: settings.signUp,
    signUpCreditsMicros: Money.micros(settings.signUpCreditsMicros),
    sessions: { idleTimeoutMs: settings.sessionIdleTimeoutMs, maxAgeMs: settings.sessionMaxAgeMs }
  }).pipe(Layer.provideMerge(mailer(dataDir, settings)))

export interface ServerOptions extends Omit<KernelOptions, "mediaUrls"> {
  readonly token: Redacted.Redacted<string>
  readonly dataDir: string
  /** Called once the server listens, with the address it listens on, the public URL in force and the admin listener's URL. */
  readonly onListening?: ((url: string, publicUrl: string, adminUrl: string) => Effect.Effect<void>) | undefined
}

/**
 * The URL this machine reaches a server at: its bound address, a wildcard host (0.0.0.0, ::)
 * named by the loopback address of its family.
 */
export const localUrl = (address: NetAddress.SocketAddress): string =>
  NetAddress.isInetAddress(address) && NetAddress.isUnspecified(address.address)
    ? HttpServer.formatAddress(
        NetAddress.inetAddressUnsafe(
          NetAddress.isInetAddressV4(address) ? NetAddress.ipv4Loopback : NetAddress.ipv6Loopback,
          address.port
        )
      )
    : HttpServer.formatAddress(address)

/**
 * The whole server over the storage it is given (`serverStorage`, or any stores with an
 * OAuthStore): the API, chat and MCP on ServerConfig's host and port, the admin service on its own
 * listener, and unless `settings.workers` is false a task worker and the reconciler. The public URL
 * is `settings.publicUrl`, else the bound `localUrl` (so it listens first); the admin file is
 * written once both listeners are bound. Links are signed with `mediaLinkSecret(settings, token)`.
 */
export const server = (options: ServerOptions) =>
  Layer.unwrap(
    Effect.map(HttpServer.HttpServer, (http) => {
      const local = localUrl(http.address)
      const publicUrl = Option.getOrElse(options.settings.publicUrl, () => local)
      const app = Layer.mergeAll(
        Server.layer.pipe(Layer.provide(Layer.succeed(PublicUrl, publicUrl))),
        ChatServer.layer,
        BillingServer.layer,
        OperatorServer.layer,
        WebConsole.layer,
        McpEndpoint.layer({
          baseUrl: new URL(publicUrl).origin,
          registrationLimit: {
            windowSeconds: 3600,
            perSource: options.settings.mcpRegistrationsPerHour,
            total: options.settings.mcpRegistrationsPerHourTotal
          },
          authorizeLimit: { windowSeconds: 60, perSource: options.settings.mcpAuthorizationsPerMinute },
          grantLifetimeSeconds: options.settings.mcpSignInMaxDays * 24 * 3600,
          allowedOrigins: options.settings.mcpAllowedOrigins,
          allowedHosts: [new URL(local).host, ...options.settings.mcpAllowedHosts]
        })
      )
      const listening = Layer.effectDiscard(
        Effect.gen(function* () {
          const admin = localUrl((yield* AdminServer.AdminListener).address)
          yield* AdminFile.write(options.dataDir, { url: local, adminUrl: admin, token: Redacted.value(options.token) })
          yield* options.onListening?.(HttpServer.formatAddress(http.address), publicUrl, admin) ?? Effect.void
        })
      )
      const workers = options.settings.workers
        ? Layer.effectDiscard(Effect.forkScoped(serveWorkers(options.settings)))
        : Layer.empty
      // Readiness asks for a recent heartbeat only of workers in this process.
      const heartbeat = options.settings.workers ? Heartbeat.layer : Layer.empty
      const mediaUrls = {
        baseUrl: publicUrl,
        secret: mediaLinkSecret(options.settings, options.token),
        previousSecret: Option.getOrUndefined(options.settings.mediaLinkSecretPrevious)
      }
      const served = Layer.merge(
        Server.serveOn(app, {
          disableLogger: true,
          trustedProxies: options.settings.trustedProxies,
          observed: { accessLog: options.settings.accessLog }
        }),
        AdminServer.layer({ token: options.token, metricsToken: Option.getOrUndefined(options.settings.metricsToken) })
      )
      return Layer.mergeAll(listening.pipe(Layer.provideMerge(served)), workers).pipe(
        Layer.provideMerge(PaymentsConfig.layer(publicUrl)),
        Layer.provideMerge(consoleAuth(options.dataDir, options.settings, publicUrl)),
        Layer.provideMerge(heartbeat),
        Layer.provideMerge(Layer.succeed(EventStream.Settings, { heartbeatMs: options.settings.sseHeartbeatSeconds * 1000 })),
        Layer.provideMerge(ChatServices.layerConfig),
        Layer.provideMerge(kernel({ ...options, mediaUrls }))
      )
    })
  ).pipe(Layer.provideMerge(Server.listen))

/** The address of a running `server`'s admin listener, as the CLI reaches it. */
export const adminUrl: Effect.Effect<string, never, AdminServer.AdminListener> = AdminServer.AdminListener.use((listener) =>
  Effect.succeed(localUrl(listener.address))
)

const mcpUrlOf = (publicUrl: string): string => `${new URL(publicUrl).origin}/mcp`

/** Where blobs are, for the banners: the bucket was written and read by the start-up check. */
const blobsLine = (dataDir: string, settings: Pick<Settings, "s3">): string =>
  Option.match(settings.s3, {
    onNone: () => `files in ${join(dataDir, "blobs")} (set S3_BUCKET to keep them in S3)`,
    onSome: (s3) =>
      `${S3Settings.describe(s3)}: written and read at start` +
      (s3.presignedDownloads ? "; result downloads redirect to presigned URLs" : "")
  })

/** The banner's account of which families run upstream, which on the simulator (and at what price), and which on nothing. */
export const providersLine = (adapters: ReadonlyArray<Provider.ProviderV1>, settings: Pick<Settings, "simulatedPrice">) => {
  const { live, simulated, unavailable } = Providers.roster(adapters)
  const list = (families: ReadonlyArray<string>) => (families.length === 0 ? "none" : families.join(", "))
  return [
    `live: ${list(live)}`,
    `simulated: ${list(simulated)}${simulated.length === 0 ? "" : ` (SIMULATED_PRICE=${settings.simulatedPrice})`}`,
    ...(unavailable.length === 0 ? [] : [`unavailable (no upstream, SIMULATED_ENABLED off): ${list(unavailable)}`])
  ].join("; ")
}

const announce = (
  url: string,
  publicUrl: string,
  adminUrl: string,
  dataDir: string,
  settings: Settings,
  adapters: ReadonlyArray<Provider.ProviderV1>
) => {
  const origin = new URL(publicUrl).origin
  return Console.log(
    [
      `taskmeter is listening on ${url}`,
      `  console    ${origin}/ (sign up at ${origin}/sign-up)`,
      `  api        ${origin}/api/v1`,
      `  openapi    ${origin}${Server.OPENAPI_PATH}`,
      `  docs       ${origin}${ApiReference.PATH} (the API reference)`,
      `  chat       ${origin}/api/v1/chat/completions (OpenAI-compatible)`,
      `  mcp        ${mcpUrlOf(publicUrl)} (MCP clients sign in with an API key or \`npx taskmeter admin signin-code\`)`,
      `  admin      ${adminUrl}${AdminServer.PATH} (ADMIN_HOST, ADMIN_PORT; operator token in ${AdminFile.pathOf(dataDir)}, the CLI reads it)`,
      `  metrics    ${adminUrl}/metrics (Prometheus text${Option.isSome(settings.metricsToken) ? ", METRICS_TOKEN" : ""}); health ${origin}/healthz, ${origin}/readyz`,
      `  storage    ${
        Option.isSome(settings.databaseUrl)
          ? "PostgreSQL (DATABASE_URL)"
          : `PGlite in ${join(dataDir, "pg")} (set DATABASE_URL to use PostgreSQL)`
      }`,
      `  blobs      ${blobsLine(dataDir, settings)}`,
      `  workers    ${settings.workers ? "in this process" : "none here (WORKERS=false): run `npx taskmeter worker`"}`,
      `  providers  ${providersLine(adapters, settings)}`,
      `  sign-up    ${origin}/api/v1/auth/sign-up (SIGNUP=${settings.signUp}${
        settings.signUp === "invite" ? ": `npx taskmeter admin invite EMAIL`" : ""
      }); mail ${Option.isSome(settings.smtpUrl) ? "through SMTP_URL" : `logged and written to ${join(dataDir, "mail")}`}`,
      "",
      "Create a first account and its API key:",
      "  npx taskmeter admin account create --credits-usd 25",
      "Stop with Ctrl-C."
    ].join("\n")
  )
}

/** Runs a process's `effect` with the logger of LOG_FORMAT. */
const withLogger = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(config, (settings) => Effect.provide(effect, Logging.layer({ format: settings.logFormat })))

/**
 * What `npm start` runs: the server from the environment's settings, until interrupted. The
 * process's umask becomes 077 and DATA_DIR is made private first (DataDir).
 */
export const start = Effect.scoped(
  Effect.gen(function* () {
    const serverSettings = yield* ServerConfig.config
    const settings = yield* config
    const adapters = yield* Providers.scoped
    const dataDir = resolvePath(serverSettings.dataDir)
    yield* GcSettings.apply
    // Before anything is created: the database, blobs and admin.json are the owner's alone.
    yield* DataDir.restrictUmask
    yield* DataDir.prepare(dataDir)
    const token = yield* OperatorToken.resolve(dataDir, settings.operatorToken)
    return yield* Layer.launch(
      server({
        settings,
        adapters,
        pricesFile: pricesFileOf(dataDir),
        token,
        dataDir,
        onListening: (url, publicUrl, adminUrl) =>
          // Again once the database is open: PGlite sets its files' modes itself (0666), whatever the umask.
          Effect.ignore(DataDir.prepare(dataDir, { quiet: true })).pipe(
            // Log lines before the banner are written before it.
            Effect.andThen(Effect.sync(Logging.flush)),
            Effect.andThen(announce(url, publicUrl, adminUrl, dataDir, settings, adapters))
          )
      }).pipe(
        Layer.provide(serverStorage(dataDir, settings)),
        Layer.provide(ServerConfig.layerWith({ ...serverSettings, dataDir })),
        Layer.provide(Tracing.layer)
      )
    )
  })
).pipe(withLogger)

/** The worker banner's account of its listener. */
const workerListenerLine = (address: NetAddress.SocketAddress | undefined, settings: Pick<Settings, "metricsToken">) => {
  if (address === undefined) return "no metrics listener (set WORKER_METRICS_PORT)"
  const url = localUrl(address)
  return `metrics ${url}/metrics${Option.isSome(settings.metricsToken) ? " (METRICS_TOKEN)" : ""}, health ${url}/healthz, ${url}/readyz`
}

export class WorkerNotConfigured extends Data.TaggedError("WorkerNotConfigured")<{ readonly message: string }> {}

/**
 * What `taskmeter worker` runs: a task worker and the reconciler, without an API server (with
 * WORKER_METRICS_PORT, a listener for /metrics, /healthz and /readyz: WorkerListener),
 * against the PostgreSQL at DATABASE_URL (PGlite cannot be shared between processes). Results
 * go to the S3_BUCKET the servers use, else under DATA_DIR/blobs, which the servers must then
 * see too (same machine). Media links are signed like the server's: with MEDIA_LINK_SECRET, or
 * the operator token of OPERATOR_TOKEN or the data directory's admin.json, whose address is
 * also the default PUBLIC_URL.
 */
export const worker = Effect.scoped(
  Effect.gen(function* () {
    const serverSettings = yield* ServerConfig.config
    const settings = yield* config
    const adapters = yield* Providers.scoped
    const dataDir = resolvePath(serverSettings.dataDir)
    if (Option.isNone(settings.databaseUrl)) {
      return yield* new WorkerNotConfigured({
        message:
          "A worker process needs DATABASE_URL: the embedded PGlite database belongs to the server process, " +
          "whose own in-process workers serve it."
      })
    }
    yield* GcSettings.apply
    yield* DataDir.restrictUmask
    yield* DataDir.prepare(dataDir)
    const file = yield* AdminFile.read(dataDir)
    const token = Option.orElse(settings.operatorToken, () =>
      Option.map(Option.fromNullishOr(file), (f) => Redacted.make(f.token))
    )
    const secret = Option.orElse(settings.mediaLinkSecret, () => Option.map(token, (t) => mediaLinkSecret(settings, t)))
    const publicUrl = Option.orElse(settings.publicUrl, () => Option.map(Option.fromNullishOr(file), (f) => f.url))
    if (Option.isNone(secret) || Option.isNone(publicUrl)) {
      return yield* new WorkerNotConfigured({
        message:
          `Cannot sign media links like the server: set PUBLIC_URL and MEDIA_LINK_SECRET (or OPERATOR_TOKEN), ` +
          `or start the server first so that ${AdminFile.pathOf(dataDir)} exists.`
      })
    }
    const executors = executorsOf(adapters, settings)
    return yield* Effect.gen(function* () {
      const listener = yield* Option.match(settings.workerMetricsPort, {
        onNone: () => Effect.undefined,
        onSome: (port) =>
          WorkerListener.serve({
            host: settings.workerMetricsHost,
            port,
            metricsToken: Option.getOrUndefined(settings.metricsToken)
          })
      })
      yield* Effect.sync(Logging.flush)
      yield* Console.log(
        `taskmeter worker: ${providersLine(adapters, settings)}; against DATABASE_URL; ` +
          `blobs in ${blobsLine(dataDir, settings)}; ${workerListenerLine(listener, settings)}; stop with Ctrl-C.`
      )
      return yield* serveWorkers(settings)
    }).pipe(
      Effect.provide(
        Layer.mergeAll(
          // Readiness on the listener asks for the worker's heartbeat.
          Option.isSome(settings.workerMetricsPort) ? Heartbeat.layer : Layer.empty,
          Catalog.layer,
          Layer.succeed(Executors.Executors, executors),
          Retention.layer(settings.resultRetentionDays),
          MediaUrls.layer({ baseUrl: publicUrl.value, secret: secret.value }),
          mailer(dataDir, settings),
          callbackUrls(settings, {
            baseUrl: publicUrl.value,
            secret: secret.value,
            previousSecret: Option.getOrUndefined(settings.mediaLinkSecretPrevious)
          }),
          storage(dataDir, settings),
          Tracing.layer
        )
      )
    )
  })
).pipe(withLogger)
