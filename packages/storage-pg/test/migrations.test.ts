/**
 * Migrations from empty, on PostgreSQL and PGlite: they create everything, record what they
 * ran, change nothing when run again, and keep the data of an existing database; migration 0036
 * sums the charges a journal holds already into the spend rollup; migration 0039 sets the
 * fillfactor of `tasks`.
 */
import { Config, Effect, Exit, Layer } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { AccountStore, Ids, LedgerStore, Uuid7 } from "@taskmeter/kernel"
import { PgStore } from "../src/index.ts"
import { dropSchemaAfter, makeTemplate, pgliteDataDir, removeTemplate, schemaName, url } from "./TestDatabase.ts"

beforeAll(makeTemplate)
afterAll(removeTemplate)

const T0 = new Date("2030-01-01T00:00:00.000Z")
const TASKS_FILLFACTOR = "fillfactor=80"

const ledgerTables = [
  "accounts",
  "api_key_windows",
  "api_keys",
  "idempotency_keys",
  "ledger_entries",
  "media",
  "model_budget_days",
  "price_lists",
  "results",
  "taskmeter_migrations",
  "tasks"
]

/** Every migration the package ships, as the migrator records them. */
const allMigrations = Effect.map(Effect.orDie(PgStore.migrations), (loaded) => loaded.map(([id, name]) => [id, name]))

/** What a migrated schema holds, and what the migrator says when asked to run again. */
const inspect = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const tables = yield* sql<{ readonly table_name: string }>`SELECT table_name FROM information_schema.tables
    WHERE table_schema = current_schema() ORDER BY table_name`
  const recorded = yield* sql<{ readonly migration_id: number; readonly name: string }>`SELECT migration_id, name
    FROM taskmeter_migrations ORDER BY migration_id`
  const rerun = yield* PgStore.migrate
  const names = tables.map((row) => row.table_name)
  // Migration 25: no function makes a random ledger entry id any more; the SQL v7 carries now.
  const randomEntryIds = yield* sql<{ readonly name: string }>`SELECT proname AS name FROM pg_proc
    WHERE pronamespace = current_schema()::regnamespace AND strpos(prosrc, ${"'entry_' || gen_random_uuid()"}) > 0`
  // Migration 39: inserts leave room on each tasks page for the versions its rows' updates write.
  const [tasks] = yield* sql<{ readonly options: ReadonlyArray<string> | null }>`SELECT reloptions AS options
    FROM pg_class WHERE oid = 'tasks'::regclass`
  const before = Date.now()
  const [made] = yield* sql<{ readonly id: string }>`SELECT taskmeter_uuidv7()::text AS id`
  return {
    ledgerTables: ledgerTables.filter((table) => names.includes(table)),
    recorded: recorded.map((row) => [row.migration_id, row.name]),
    rerun,
    randomEntryIds: randomEntryIds.map((row) => row.name),
    tasksOptions: tasks?.options,
    uuidv7:
      /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(made!.id) &&
      Math.abs(Uuid7.timeOf(made!.id) - before) < 60_000
  }
})

const createAccount = AccountStore.AccountStore.use((store) =>
  store.createAccount({ id: Ids.makeAccountId(), name: "kept", createdAt: T0 })
)
const listAccounts = AccountStore.AccountStore.use((store) => store.listAccounts)

/** What `inspect` finds after every migration ran once on an empty database. */
const migrated = (recorded: unknown) => ({
  ledgerTables,
  recorded,
  rerun: [],
  randomEntryIds: [],
  tasksOptions: [TASKS_FILLFACTOR],
  uuidv7: true
})

describe("migrations", () => {
  it.live("run from an empty PostgreSQL schema, once", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const schema = schemaName()
        yield* Layer.build(dropSchemaAfter(schema))
        const options = { url, schema, maxConnections: 2, listen: false }
        const first = yield* Effect.scoped(
          Effect.gen(function* () {
            const account = yield* createAccount
            return { account, state: yield* inspect }
          }).pipe(Effect.provide(Layer.merge(PgStore.layer(options), PgStore.client(options))))
        )
        expect(first.state).toEqual(migrated(yield* allMigrations))

        // A second start finds everything in place and the data untouched.
        const second = yield* Effect.scoped(listAccounts.pipe(Effect.provide(PgStore.layer(options))))
        expect(second).toEqual([first.account])
      })
    )
  )

  it.live("run from an empty PGlite data directory, once", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dataDir = yield* pgliteDataDir
        const client = PgStore.clientEmbedded({ dataDir })
        const first = yield* Effect.scoped(
          Effect.gen(function* () {
            const account = yield* createAccount
            return { account, state: yield* inspect }
          }).pipe(Effect.provide(PgStore.layerClient({}).pipe(Layer.provideMerge(client))))
        )
        expect(first.state).toEqual(migrated(yield* allMigrations))

        const second = yield* Effect.scoped(listAccounts.pipe(Effect.provide(PgStore.layerEmbedded({ dataDir }))))
        expect(second).toEqual([first.account])
      })
    )
  )

  it.live("the embedded store keeps a schema of its own when asked", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dataDir = yield* pgliteDataDir
        const options = { dataDir, schema: "tenant_a" }
        const schemas = yield* Effect.scoped(
          Effect.gen(function* () {
            yield* createAccount
            const sql = yield* SqlClient.SqlClient
            return yield* sql<{ readonly table_schema: string }>`SELECT DISTINCT table_schema FROM information_schema.tables
          WHERE table_name = 'accounts'`
          }).pipe(
            Effect.provide(PgStore.layerClient({ schema: "tenant_a" }).pipe(Layer.provideMerge(PgStore.clientEmbedded(options))))
          )
        )
        expect(schemas.map((row) => row.table_schema)).toEqual(["tenant_a"])
      })
    )
  )

  it.live("layerConfig reads the same options from configuration", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const schema = schemaName()
        yield* Layer.build(dropSchemaAfter(schema))
        const stores = PgStore.layerConfig({ url: Config.succeed(url), schema: Config.succeed(schema) })
        const account = yield* Effect.scoped(createAccount.pipe(Effect.provide(stores)))
        const listed = yield* Effect.scoped(listAccounts.pipe(Effect.provide(PgStore.layer({ url, schema, listen: false }))))
        expect(listed).toEqual([account])
      })
    )
  )

  it.live("migration 0036 sums the charges already in the journal, once", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const schema = schemaName()
        yield* Layer.build(dropSchemaAfter(schema))
        const options = { url, schema, maxConnections: 2, listen: false }
        const accountId = Ids.makeAccountId()
        // A database before 0036 whose journal holds chat charges (and a reservation, which is no spend).
        yield* Effect.scoped(
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            yield* sql`CREATE SCHEMA IF NOT EXISTS ${sql(schema)}`.unprepared
            yield* Migrator.make({})({
              loader: Effect.map(PgStore.migrations, (loaded) => loaded.filter(([id]) => id < 36)),
              table: PgStore.migrationsTable
            })
            yield* sql`INSERT INTO accounts (id, name, created_at) VALUES (${accountId}, 'kept', ${T0})`
            for (const [n, model, day, charge] of [
              [1, "kept-a", 1, 300_000],
              [2, "kept-a", 1, 200_000],
              [3, "kept-b", 2, 50_000]
            ] as const) {
              const at = new Date(T0.getTime() + day * 86_400_000)
              const id = `chat_kept_${n}`
              yield* sql`INSERT INTO chat_requests (id, account_id, model, status, reserved_micros, charged_micros, tiers, created_at, completed_at)
                VALUES (${id}, ${accountId}, ${model}, 'succeeded', 1000000, ${charge}, '[]'::jsonb, ${at}, ${at})`
              for (const [kind, amount] of [
                ["reserve", 1_000_000],
                ["charge", charge]
              ] as const) {
                yield* sql`INSERT INTO ledger_entries (id, account_id, kind, amount_micros, chat_request_id, created_at)
                  VALUES (${`entry_${kind}_${n}`}, ${accountId}, ${kind}, ${amount}, ${id}, ${at})`
              }
            }
          }).pipe(Effect.provide(PgStore.client(options)))
        )
        const [spend, state] = yield* Effect.scoped(
          Effect.all([
            LedgerStore.LedgerStore.use((ledger) => ledger.spend(accountId, { from: "2030-01-01", to: "2030-01-31" })),
            inspect
          ]).pipe(Effect.provide(Layer.merge(PgStore.layer(options), PgStore.client(options))))
        )
        expect(spend).toEqual([
          { day: "2030-01-02", model: "kept-a", taskMicros: 0, chatMicros: 500_000 },
          { day: "2030-01-03", model: "kept-b", taskMicros: 0, chatMicros: 50_000 }
        ])
        expect(state.recorded).toEqual(yield* allMigrations)
      })
    )
  )

  it.live("an invalid schema name is refused before connecting", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(Effect.scoped(Layer.build(PgStore.layer({ url, schema: "bad; DROP" }))))
      expect(Exit.isFailure(exit)).toBe(true)
    })
  )

  it.live("an unreachable database fails the layer with StoreUnavailable", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Effect.scoped(Layer.build(PgStore.layer({ url: "postgres://postgres@127.0.0.1:1/none", listen: false })))
      )
      expect(error._tag).toBe("StoreUnavailable")
    })
  )
})
