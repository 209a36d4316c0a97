/**
 * Databases for the OAuthStorePg tests: on the machine's PostgreSQL (TEST_DATABASE_URL, as CI sets
 * it) a schema created for the test and dropped after it, or one schema for the file emptied for
 * each case; on PGlite one data directory per test file, since creating a PGlite takes seconds
 * and reopening it a few hundred milliseconds. Tests of a file run one after another, and only
 * one of them may open that PGlite at a time (PgStore's lock file says so if not).
 */
import { randomUUID } from "node:crypto"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll } from "@effect/vitest"
import { PgStore } from "@taskmeter/storage-pg"
import { SchemaReset } from "@taskmeter/storage-pg/testing"
import { OAuthStorePg } from "../../src/index.ts"
import * as Dependencies from "../../../../test/Dependencies.ts"

export const url = Dependencies.databaseUrl

export const schemaName = (): string => `test_oauth_${randomUUID().replaceAll("-", "").slice(0, 16)}`

/** Runs `effect` on a connection of its own, outside any test schema. */
export const admin = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.scoped(effect.pipe(Effect.provide(PgStore.client({ url, maxConnections: 1 }))))

/** A new empty schema on PostgreSQL, dropped when the scope closes; its name. */
export const freshSchema: Effect.Effect<string, never, Scope.Scope> = Effect.acquireRelease(
  Effect.orDie(
    Effect.gen(function* () {
      const schema = schemaName()
      yield* admin(SqlClient.SqlClient.use((sql) => sql`CREATE SCHEMA ${sql(schema)}`))
      return schema
    })
  ),
  (schema) => Effect.orDie(admin(SqlClient.SqlClient.use((sql) => sql`DROP SCHEMA ${sql(schema)} CASCADE`)))
)

/**
 * A client on PostgreSQL in a fresh schema; four connections, so that the concurrency cases of
 * the conformance suite really race.
 */
export const postgres: Layer.Layer<SqlClient.SqlClient> = Layer.unwrap(
  Effect.map(freshSchema, (schema) => Layer.orDie(PgStore.client({ url, schema, maxConnections: 4 })))
)

/** Empties the schema's tables (the migrations' records kept) for the next case. */
const emptied = Layer.effectDiscard(Effect.orDie(SchemaReset.reset([OAuthStorePg.migrationsTable])))

/**
 * `postgres` for a file's cases in one schema (call at the top of the file), dropped after the
 * last, each case finding it emptied: the isolation of a fresh schema without its DDL per case.
 */
export const postgresPerFile = (): (() => Layer.Layer<SqlClient.SqlClient>) => {
  const schema = schemaName()
  afterAll(() =>
    Effect.runPromise(Effect.orDie(admin(SqlClient.SqlClient.use((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`))))
  )
  const created = Layer.effectDiscard(
    Effect.orDie(SqlClient.SqlClient.use((sql) => sql`CREATE SCHEMA IF NOT EXISTS ${sql(schema)}`))
  )
  return () => Layer.provideMerge(Layer.merge(created, emptied), Layer.orDie(PgStore.client({ url, schema, maxConnections: 4 })))
}

let pgliteDirectory: Promise<string> | undefined

/** A client on this test file's PGlite, in a new schema. */
export const pglite: Layer.Layer<SqlClient.SqlClient> = Layer.unwrap(
  Effect.map(
    Effect.promise(() => (pgliteDirectory ??= mkdtemp(join(tmpdir(), "taskmeter-oauth-pglite-")))),
    (dataDir) => Layer.orDie(PgStore.clientEmbedded({ dataDir, schema: schemaName() }))
  )
)

/** Removes this test file's PGlite; call once the file's tests are done. */
export const removePglite = async (): Promise<void> => {
  if (pgliteDirectory !== undefined) await rm(await pgliteDirectory, { recursive: true, force: true })
  pgliteDirectory = undefined
}

let shared: { readonly context: Context.Context<SqlClient.SqlClient>; readonly scope: Scope.Closeable } | undefined

/**
 * Opens one PGlite for the whole file (in a beforeAll), which `sharedPglite` empties for each
 * test: emptying takes milliseconds where reopening the PGlite takes hundreds.
 */
export const openSharedPglite = async (): Promise<void> => {
  const dataDir = await (pgliteDirectory ??= mkdtemp(join(tmpdir(), "taskmeter-oauth-pglite-")))
  const scope = await Effect.runPromise(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(PgStore.clientEmbedded({ dataDir }), scope))
  shared = { context, scope }
}

/** Closes and removes the file's PGlite; call once its tests are done. */
export const closeSharedPglite = async (): Promise<void> => {
  const closing = shared
  shared = undefined
  if (closing !== undefined) await Effect.runPromise(Scope.close(closing.scope, Exit.void))
  await removePglite()
}

/** A client on the file's PGlite, emptied first. PGlite is one session: a file's tests run one after another. */
export const sharedPglite: Layer.Layer<SqlClient.SqlClient> = Layer.unwrap(
  Effect.gen(function* () {
    if (shared === undefined) return yield* Effect.die(new Error("openSharedPglite has not run"))
    const client = Layer.succeedContext(shared.context)
    return Layer.merge(client, emptied.pipe(Layer.provide(client)))
  })
)
