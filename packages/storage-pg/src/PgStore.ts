/**
 * The storage ports (AccountStore, LedgerStore, TaskStore, MediaStore, ChatStore, PriceStore,
 * ChatPriceStore, BudgetStore, PaymentStore, UserStore, SessionStore, PasskeyStore, StoreHealth, WebhookStore) on PostgreSQL through @effect/sql-pg, migrated at start:
 * `layer({ url })` for a real server, `layerEmbedded({ dataDir })` for PGlite; both take a
 * `schema` and also provide the PgClient and SqlClient for other stores. An unreachable database is StoreUnavailable; a write
 * refused for its data a StoreRefused defect. Details: packages/storage-pg/README.md.
 */
import { Config, Context, Effect, Layer, Redacted } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { PgClient } from "@effect/sql-pg"
import {
  AccountStore,
  BudgetStore,
  ChatStore,
  LedgerStore,
  MediaStore,
  PasskeyStore,
  PaymentStore,
  PriceStore,
  ChatPriceStore,
  SessionStore,
  StoreError,
  StoreHealth,
  TaskStore,
  UserStore,
  WebhookStore
} from "@taskmeter/kernel"
import * as PgChatStore from "./internal/PgChatStore.ts"
import * as Embedded from "./internal/Embedded.ts"
import * as PgAccountStore from "./internal/PgAccountStore.ts"
import * as PgBudgetStore from "./internal/PgBudgetStore.ts"
import * as PgLedgerStore from "./internal/PgLedgerStore.ts"
import * as PgMaintenance from "./internal/PgMaintenance.ts"
import * as PgMediaStore from "./internal/PgMediaStore.ts"
import * as PgPasskeyStore from "./internal/PgPasskeyStore.ts"
import * as PgPaymentStore from "./internal/PgPaymentStore.ts"
import * as PgPriceStore from "./internal/PgPriceStore.ts"
import * as PgSessionStore from "./internal/PgSessionStore.ts"
import * as PgStoreHealth from "./internal/PgStoreHealth.ts"
import * as PgTaskStore from "./internal/PgTaskStore.ts"
import * as PgUserStore from "./internal/PgUserStore.ts"
import * as PgWebhookStore from "./internal/PgWebhookStore.ts"
import * as PgStreamSlots from "./internal/PgStreamSlots.ts"
import * as Wakeups from "./internal/Wakeups.ts"
import ledgerSchema from "./migrations/0001_ledger_schema.ts"
import admissionFunctions from "./migrations/0002_admission_functions.ts"
import admissionBatches from "./migrations/0003_admission_batches.ts"
import resultsTaskFk from "./migrations/0004_results_task_fk.ts"
import chatRequests from "./migrations/0005_chat_requests.ts"
import authenticateBatches from "./migrations/0006_authenticate_batches.ts"
import admissionFastPath from "./migrations/0007_admission_fast_path.ts"
import idempotencyPurge from "./migrations/0008_idempotency_purge.ts"
import keyedAdmission from "./migrations/0009_keyed_admission.ts"
import priceLists from "./migrations/0010_price_lists.ts"
import modelBudgets from "./migrations/0011_model_budgets.ts"
import oneAdmission from "./migrations/0012_one_admission.ts"
import taskTraceparent from "./migrations/0013_task_traceparent.ts"
import upstreamSlots from "./migrations/0014_upstream_slots.ts"
import upstreamAnswer from "./migrations/0015_upstream_answer.ts"
import payments from "./migrations/0016_payments.ts"
import chatLeases from "./migrations/0017_chat_leases.ts"
import chatPriceLists from "./migrations/0018_chat_price_lists.ts"
import taskCancelLists from "./migrations/0019_task_cancel_lists.ts"
import chatUpstreamCost from "./migrations/0020_chat_upstream_cost.ts"
import consoleUsers from "./migrations/0021_console_users.ts"
import webhooks from "./migrations/0022_webhooks.ts"
import chatShortfall from "./migrations/0024_chat_shortfall.ts"
import boundedSweeps from "./migrations/0026_bounded_sweeps.ts"
import signInFailures from "./migrations/0027_sign_in_failures.ts"
import timeOrderedIds from "./migrations/0028_time_ordered_ids.ts"
import webhookLog from "./migrations/0029_webhook_log.ts"
import ledgerPeriod from "./migrations/0031_ledger_period.ts"
import taskProgress from "./migrations/0032_task_progress.ts"
import paymentWebhooks from "./migrations/0034_payment_webhooks.ts"
import spendDaysPasskeyNames from "./migrations/0036_spend_days_passkey_names.ts"
import streamSlots from "./migrations/0037_stream_slots.ts"
import ascendingAccountIndexes from "./migrations/0038_ascending_account_indexes.ts"
import tasksFillfactor from "./migrations/0039_tasks_fillfactor.ts"
import taskIndexDiet from "./migrations/0040_task_index_diet.ts"
import admissionTraceContext from "./migrations/0041_admission_trace_context.ts"
import hashedAccountKeys from "./migrations/0042_hashed_account_keys.ts"
import upstreamSlotRecheck from "./migrations/0043_upstream_slot_recheck.ts"
import chatSettleWithoutRescan from "./migrations/0044_chat_settle_without_rescan.ts"
import admissionWithoutScans from "./migrations/0045_admission_without_scans.ts"

export type Stores =
  | AccountStore.AccountStore
  | LedgerStore.LedgerStore
  | TaskStore.TaskStore
  | MediaStore.MediaStore
  | ChatStore.ChatStore
  | PriceStore.PriceStore
  | ChatPriceStore.ChatPriceStore
  | BudgetStore.BudgetStore
  | PaymentStore.PaymentStore
  | UserStore.UserStore
  | SessionStore.SessionStore
  | PasskeyStore.PasskeyStore
  | StoreHealth.StoreHealth
  | WebhookStore.WebhookStore

export interface Options {
  /** postgres://user:password@host:port/database */
  readonly url: string | Redacted.Redacted
  /** Lower-case letters, digits and `_`; default: the server's search_path (usually `public`). */
  readonly schema?: string | undefined
  /** Pool size, the LISTEN connection included. Default 16. */
  readonly maxConnections?: number | undefined
  /** LISTEN for wake-ups from other processes (new work, a saved price list). Default true. */
  readonly listen?: boolean | undefined
  /** How long an event-stream slot outlives this process's last renewal (it renews every third). Default 30 s. */
  readonly streamLeaseMs?: number | undefined
  /**
   * Where no autovacuum runs (PgMaintenance): how often tables that outgrew their planner
   * statistics are analyzed (default 60 s) and the tables vacuumed (default 1 h); 0 never.
   */
  readonly analyzeEveryMs?: number | undefined
  readonly vacuumEveryMs?: number | undefined
}

export interface EmbeddedOptions {
  /** The database files go to `<dataDir>/pg`. */
  readonly dataDir: string
  /** Port on 127.0.0.1; default 0, an ephemeral one. */
  readonly port?: number | undefined
  readonly schema?: string | undefined
}

export const migrationsTable = "taskmeter_migrations"

/** The migrations, by number. Never edit one that has shipped: add the next. */
const migrationRecord = {
  "1_ledger_schema": ledgerSchema,
  "2_admission_functions": admissionFunctions,
  "3_admission_batches": admissionBatches,
  "4_results_task_fk": resultsTaskFk,
  "5_chat_requests": chatRequests,
  "6_authenticate_batches": authenticateBatches,
  "7_admission_fast_path": admissionFastPath,
  "8_idempotency_purge": idempotencyPurge,
  "9_keyed_admission": keyedAdmission,
  "10_price_lists": priceLists,
  "11_model_budgets": modelBudgets,
  "12_one_admission": oneAdmission,
  "13_task_traceparent": taskTraceparent,
  "14_upstream_slots": upstreamSlots,
  "15_upstream_answer": upstreamAnswer,
  "16_payments": payments,
  "17_chat_leases": chatLeases,
  "18_chat_price_lists": chatPriceLists,
  "19_task_cancel_lists": taskCancelLists,
  "20_chat_upstream_cost": chatUpstreamCost,
  "21_console_users": consoleUsers,
  "22_webhooks": webhooks,
  "24_chat_shortfall": chatShortfall,
  "26_bounded_sweeps": boundedSweeps,
  "27_sign_in_failures": signInFailures,
  "28_time_ordered_ids": timeOrderedIds,
  "29_webhook_log": webhookLog,
  "31_ledger_period": ledgerPeriod,
  "32_task_progress": taskProgress,
  "34_payment_webhooks": paymentWebhooks,
  "36_spend_days_passkey_names": spendDaysPasskeyNames,
  "37_stream_slots": streamSlots,
  "38_ascending_account_indexes": ascendingAccountIndexes,
  "39_tasks_fillfactor": tasksFillfactor,
  "40_task_index_diet": taskIndexDiet,
  "41_admission_trace_context": admissionTraceContext,
  "42_hashed_account_keys": hashedAccountKeys,
  "43_upstream_slot_recheck": upstreamSlotRecheck,
  "44_chat_settle_without_rescan": chatSettleWithoutRescan,
  "45_admission_without_scans": admissionWithoutScans
}

export const migrations = Migrator.fromRecord(migrationRecord)

/** The highest migration id of this release: readiness wants the database at least there. */
export const latestMigration = Math.max(...Object.keys(migrationRecord).map((name) => Number.parseInt(name, 10)))

/** Runs the pending migrations; the ids and names of those it ran. */
export const migrate = Migrator.make({})({ loader: migrations, table: migrationsTable })

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,47}$/

const checkSchema = (schema: string | undefined): Effect.Effect<void, StoreError.StoreUnavailable> =>
  schema === undefined || SCHEMA_NAME.test(schema)
    ? Effect.void
    : Effect.fail(new StoreError.StoreUnavailable({ message: `Invalid schema name: ${schema}` }))

const unavailable = (what: string) => (cause: { readonly message: string }) =>
  new StoreError.StoreUnavailable({ message: `${what}: ${cause.message}`, cause })

/**
 * The stores over a PgClient that is already provided: creates the schema if asked, runs the
 * migrations, and starts the wake-ups. Prefer `layer` or `layerEmbedded`.
 */
export const layerClient = (options: {
  readonly schema?: string | undefined
  /** The NOTIFY/LISTEN channel; undefined keeps wake-ups in this process. */
  readonly channel?: string | undefined
  /** The pool's application name and size, for StoreHealth's `connections`. */
  readonly pool?: PgStoreHealth.Options["pool"]
  /** Options.streamLeaseMs. */
  readonly streamLeaseMs?: number | undefined
  /** Options.analyzeEveryMs and vacuumEveryMs. */
  readonly analyzeEveryMs?: number | undefined
  readonly vacuumEveryMs?: number | undefined
}): Layer.Layer<Stores, StoreError.StoreUnavailable, PgClient.PgClient | SqlClient.SqlClient> =>
  Layer.effectContext(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const client = yield* PgClient.PgClient
      if (options.schema !== undefined) {
        yield* sql`CREATE SCHEMA IF NOT EXISTS ${sql(options.schema)}`.unprepared.pipe(
          // Two processes starting together: the other one created it first.
          Effect.catchIf(
            (error) => error.reason._tag === "UniqueViolation",
            () => Effect.void
          ),
          Effect.mapError(unavailable("Could not create the schema"))
        )
      }
      yield* migrate.pipe(Effect.mapError(unavailable("Could not migrate the database")))
      yield* PgMaintenance.keep(options)
      const wakeups = yield* Wakeups.make({ client, channel: options.channel })
      const accounts = yield* PgAccountStore.make
      const ledger = yield* PgLedgerStore.make
      const tasks = yield* PgTaskStore.make(wakeups.work, wakeups.statuses, yield* PgStreamSlots.make(options.streamLeaseMs))
      const media = yield* PgMediaStore.make
      const chats = yield* PgChatStore.make
      const prices = yield* PgPriceStore.make(wakeups.prices)
      const chatPrices = yield* PgPriceStore.make(wakeups.chatPrices, "chat_price_lists")
      const budgets = yield* PgBudgetStore.make
      const payments = yield* PgPaymentStore.make
      const users = yield* PgUserStore.make
      const sessions = yield* PgSessionStore.make
      const passkeys = yield* PgPasskeyStore.make
      const webhookStore = yield* PgWebhookStore.make
      const health = yield* PgStoreHealth.make({ migrationsTable, latestMigration, pool: options.pool })
      return Context.make(AccountStore.AccountStore, accounts).pipe(
        Context.add(LedgerStore.LedgerStore, ledger),
        Context.add(TaskStore.TaskStore, tasks),
        Context.add(MediaStore.MediaStore, media),
        Context.add(ChatStore.ChatStore, chats),
        Context.add(PriceStore.PriceStore, prices),
        Context.add(ChatPriceStore.ChatPriceStore, chatPrices),
        Context.add(BudgetStore.BudgetStore, budgets),
        Context.add(PaymentStore.PaymentStore, payments),
        Context.add(UserStore.UserStore, users),
        Context.add(SessionStore.SessionStore, sessions),
        Context.add(PasskeyStore.PasskeyStore, passkeys),
        Context.add(StoreHealth.StoreHealth, health),
        Context.add(WebhookStore.WebhookStore, webhookStore)
      )
    })
  )

const DEFAULT_MAX_CONNECTIONS = 16

/** What this process's sessions are named in pg_stat_activity: one name per process and schema. */
const applicationName = (schema: string | undefined): string => `taskmeter ${process.pid} ${schema ?? ""}`.trim()

/** The PgClient (and SqlClient) of `layer`: a pool on a real PostgreSQL, in `schema` if given. */
export const client = (options: Options): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, StoreError.StoreUnavailable> =>
  PgClient.layerFrom(
    Effect.gen(function* () {
      yield* checkSchema(options.schema)
      return yield* PgClient.make({
        url: typeof options.url === "string" ? Redacted.make(options.url) : options.url,
        maxConnections: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
        applicationName: applicationName(options.schema),
        ...(options.schema === undefined ? {} : { startupParameters: { search_path: `"${options.schema}"` } })
      }).pipe(Effect.mapError(unavailable("Could not connect to PostgreSQL")))
    })
  )

/** The stores on a real PostgreSQL, with the client they use. */
export const layer = (
  options: Options
): Layer.Layer<Stores | PgClient.PgClient | SqlClient.SqlClient, StoreError.StoreUnavailable> =>
  layerClient({
    schema: options.schema,
    channel: options.listen === false ? undefined : `taskmeter_work_${options.schema ?? "default"}`,
    streamLeaseMs: options.streamLeaseMs,
    analyzeEveryMs: options.analyzeEveryMs,
    vacuumEveryMs: options.vacuumEveryMs,
    pool: {
      applicationName: applicationName(options.schema),
      maxConnections: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS
    }
  }).pipe(Layer.provideMerge(client(options)))

/** `layer` with its options read from configuration. */
export const layerConfig = (config: Config.Wrap<Options>): Layer.Layer<Stores, StoreError.StoreUnavailable> =>
  Layer.unwrap(
    Effect.gen(function* () {
      const options = yield* Effect.mapError(Config.unwrap(config), unavailable("Invalid PostgreSQL configuration"))
      return layer(options)
    })
  )

/**
 * The PgClient (and SqlClient) of `layerEmbedded`: PGlite in `<dataDir>/pg` behind a socket on
 * 127.0.0.1, one connection.
 */
export const clientEmbedded = (
  options: EmbeddedOptions
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, StoreError.StoreUnavailable> =>
  PgClient.layerFrom(
    Effect.gen(function* () {
      yield* checkSchema(options.schema)
      const address = yield* Embedded.start({
        dataDir: options.dataDir,
        port: options.port ?? 0,
        schema: options.schema
      }).pipe(Effect.mapError(unavailable("Could not start the embedded database")))
      return yield* PgClient.make({
        host: address.host,
        port: address.port,
        username: "postgres",
        database: "postgres",
        minConnections: 1,
        maxConnections: 1
      }).pipe(Effect.mapError(unavailable("Could not connect to the embedded database")))
    })
  )

/** The stores on an embedded PGlite in `<dataDir>/pg`, with the client they use: the default for a single machine. */
export const layerEmbedded = (
  options: EmbeddedOptions
): Layer.Layer<Stores | PgClient.PgClient | SqlClient.SqlClient, StoreError.StoreUnavailable> =>
  layerClient({ schema: options.schema }).pipe(Layer.provideMerge(clientEmbedded(options)))
