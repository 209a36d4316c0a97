/**
 * Migrations from empty, on PostgreSQL and PGlite: they create everything, record what they
 * ran, change nothing when run again, and keep the data of an existing database; migration 0033
 * sums the charges a journal holds already into the spend rollup.
 */
import { Config, Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { AccountStore, ChatStore, Ids, LedgerStore, Money, Uuid7 } from "@taskmeter/kernel"
import { PgStore } from "../src/index.ts"
import { dropSchemaAfter, makeTemplate, pgliteDataDir, removeTemplate, schemaName, url } from "./TestDatabase.ts"

beforeAll(makeTemplate)
afterAll(removeTemplate)

const T0 = new Date("2030-01-01T00:00:00.000Z")

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
  const before = Date.now()
  const [made] = yield* sql<{ readonly id: string }>`SELECT taskmeter_uuidv7()::text AS id`
  return {
    ledgerTables: ledgerTables.filter((table) => names.includes(table)),
    recorded: recorded.map((row) => [row.migration_id, row.name]),
    rerun,
    randomEntryIds: randomEntryIds.map((row) => row.name),
    uuidv7:
      /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(made!.id) &&
      Math.abs(Uuid7.timeOf(made!.id) - before) < 60_000
  }
})

const createAccount = AccountStore.AccountStore.use((store) =>
  store.createAccount({ id: Ids.makeAccountId(), name: "kept", createdAt: T0 })
)
const listAccounts = AccountStore.AccountStore.use((store) => store.listAccounts)

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
        expect(first.state).toEqual({ ledgerTables, recorded: yield* allMigrations, rerun: [], randomEntryIds: [], uuidv7: true })

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
        expect(first.state).toEqual({ ledgerTables, recorded: yield* allMigrations, rerun: [], randomEntryIds: [], uuidv7: true })

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

  it.live("migration 0033 sums the charges already in the journal, once", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const schema = schemaName()
        yield* Layer.build(dropSchemaAfter(schema))
        const options = { url, schema, maxConnections: 2, listen: false }
        const stores = Layer.merge(PgStore.layer(options), PgStore.client(options))
        const spendOf = (accountId: Ids.AccountId) =>
          LedgerStore.LedgerStore.use((ledger) => ledger.spend(accountId, { from: "2030-01-01", to: "2030-01-31" }))
        const accountId = yield* Effect.scoped(
          Effect.gen(function* () {
            const account = yield* createAccount
            yield* LedgerStore.LedgerStore.use((ledger) =>
              ledger.grant({ accountId: account.id, amountMicros: 10_000_000, note: "kept" })
            )
            const chats = yield* ChatStore.ChatStore
            for (const [model, day, charge] of [
              ["kept-a", 1, 300_000],
              ["kept-a", 1, 200_000],
              ["kept-b", 2, 50_000]
            ] as const) {
              const opened = yield* chats.open(
                {
                  id: Ids.makeChatRequestId(),
                  accountId: account.id,
                  apiKeyId: null,
                  model,
                  reservedMicros: Money.micros(1_000_000),
                  tiers: [
                    {
                      upToPromptTokens: null,
                      promptMicrosPerMillion: Money.micros(1),
                      completionMicrosPerMillion: Money.micros(1)
                    }
                  ],
                  createdAt: new Date(T0.getTime() + day * 86_400_000)
                },
                { requestsPerMinute: 100, maxOpenRequests: 100, keyUsageLimit: null }
              )
              if (opened._tag !== "Opened") return expect.unreachable(opened._tag)
              yield* chats.settle({
                id: opened.record.id,
                status: "succeeded",
                usage: { promptTokens: 1, completionTokens: 1 },
                finishReason: "stop",
                errorCode: null,
                chargeMicros: Money.micros(charge),
                completedAt: new Date(T0.getTime() + day * 86_400_000 + 1000)
              })
            }
            // The database as it was before 0033: no rollup, no trigger, no passkey names.
            const sql = yield* SqlClient.SqlClient
            for (const statement of [
              "DROP TRIGGER ledger_entries_roll_spend ON ledger_entries",
              "DROP FUNCTION taskmeter_roll_spend()",
              "DROP TABLE account_spend_days",
              "ALTER TABLE passkeys DROP COLUMN name",
              "DELETE FROM taskmeter_migrations WHERE migration_id = 33"
            ]) {
              yield* sql.unsafe(statement).unprepared
            }
            return account.id
          }).pipe(Effect.provide(stores))
        )
        const after = yield* Effect.scoped(Effect.all([spendOf(accountId), inspect]).pipe(Effect.provide(stores)))
        expect(after[0]).toEqual([
          { day: "2030-01-02", model: "kept-a", taskMicros: 0, chatMicros: 500_000 },
          { day: "2030-01-03", model: "kept-b", taskMicros: 0, chatMicros: 50_000 }
        ])
        expect(after[1].recorded).toEqual(yield* allMigrations)
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
