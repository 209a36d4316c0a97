/**
 * Fresh databases for the tests: on the real PostgreSQL a schema with a random name, dropped when
 * the layer closes, or one schema for a file emptied for each case (`postgresPerFile`); on PGlite an
 * empty data directory copied from a template made once per file, or one PGlite for the file
 * emptied for each case (`pgliteEmptied`). Emptying a migrated schema takes milliseconds; creating and
 * migrating one hundreds, opening a copied PGlite 250-700 ms.
 */
import { randomUUID } from "node:crypto"
import { cpSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PGlite } from "@electric-sql/pglite"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { BlobStore } from "@taskmeter/kernel"
import { afterAll } from "@effect/vitest"
import { PgStore } from "../src/index.ts"
import { SchemaReset } from "../src/testing/index.ts"
import * as Dependencies from "../../../test/Dependencies.ts"

export const url = Dependencies.databaseUrl

export const schemaName = (): string => `test_${randomUUID().replaceAll("-", "").slice(0, 20)}`

/** A temporary directory, removed when the layer closes. */
export const temporaryDirectory = (prefix: string) =>
  Effect.acquireRelease(
    Effect.promise(() => mkdtemp(join(tmpdir(), prefix))),
    (directory) => Effect.promise(() => rm(directory, { recursive: true, force: true }))
  )

/** Runs statements as the superuser outside any test schema. */
export const admin = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  effect.pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))

/** Drops `schema` when the layer closes, after everything built on top of it. */
export const dropSchemaAfter = (schema: string): Layer.Layer<never> =>
  Layer.effectDiscard(
    Effect.addFinalizer(() =>
      admin(SqlClient.SqlClient.use((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`)).pipe(Effect.orDie)
    )
  )

const blobs = Layer.unwrap(Effect.map(temporaryDirectory("taskmeter-blobs-"), BlobStore.layerFileSystem))

/** The stores on the real PostgreSQL in a fresh schema, with its SqlClient for tampering. */
export const postgres = (options: { readonly maxConnections?: number } = {}) => {
  const schema = schemaName()
  const client = PgStore.client({ url, schema, maxConnections: options.maxConnections ?? 4 })
  return Layer.mergeAll(
    PgStore.layerClient({ schema, channel: `taskmeter_work_${schema}` }).pipe(Layer.provideMerge(client)),
    blobs
  ).pipe(Layer.provideMerge(dropSchemaAfter(schema)))
}

/** Empties the current schema's tables (the migrations' records kept) for the next case. */
const emptied = Layer.effectDiscard(Effect.orDie(SchemaReset.reset([PgStore.migrationsTable])))

/**
 * `postgres` for a file's cases in one schema, migrated by the first and dropped after the last
 * (call at the top of the file), each case finding it emptied: the isolation of a fresh schema
 * without its several hundred milliseconds of DDL. The file's cases run one after another.
 */
export const postgresPerFile = (): (() => Layer.Layer<
  PgStore.Stores | PgClient.PgClient | SqlClient.SqlClient | BlobStore.BlobStore,
  unknown
>) => {
  const schema = schemaName()
  afterAll(() => Effect.runPromise(Layer.build(dropSchemaAfter(schema)).pipe(Effect.scoped)))
  return () =>
    Layer.mergeAll(
      PgStore.layerClient({ schema, channel: `taskmeter_work_${schema}` }).pipe(
        Layer.provide(emptied),
        Layer.provideMerge(PgStore.client({ url, schema, maxConnections: 4 }))
      ),
      blobs
    )
}

let template: Promise<string> | undefined

/** An empty PGlite data directory, made once per test file and copied for each test. */
const templateDataDir = (): Promise<string> => {
  template ??= (async () => {
    const directory = await mkdtemp(join(tmpdir(), "taskmeter-pglite-empty-"))
    const db = await PGlite.create({ dataDir: join(directory, "pg") })
    await db.close()
    return directory
  })()
  return template
}

/**
 * Makes the template ahead of the tests (in a beforeAll, whose timeout is longer), so that its
 * half minute on a busy machine does not count against the first test's.
 */
export const makeTemplate = async (): Promise<void> => {
  await templateDataDir()
}

/** Removes the template directory; call once the file's tests are done. */
export const removeTemplate = async (): Promise<void> => {
  const made = template
  template = undefined
  if (made !== undefined) await rm(await made, { recursive: true, force: true })
}

/** A data directory holding an empty PGlite (a copy of the template), removed when the layer closes. */
export const pgliteDataDir = Effect.gen(function* () {
  const directory = yield* temporaryDirectory("taskmeter-pglite-")
  const source = yield* Effect.promise(templateDataDir)
  // The synchronous copy is several times faster than the promise one for PGlite's many small files.
  yield* Effect.sync(() => cpSync(join(source, "pg"), join(directory, "pg"), { recursive: true }))
  return directory
})

/** Raises an account's cached balance behind the journal's back. */
export const corruptBalance = (accountId: string) =>
  SqlClient.SqlClient.use((sql) => sql`UPDATE accounts SET balance_micros = balance_micros + 1 WHERE id = ${accountId}`)

let shared:
  | { readonly context: Context.Context<PgClient.PgClient | SqlClient.SqlClient>; readonly scope: Scope.Closeable }
  | undefined

/**
 * Starts one PGlite for the whole file (in a beforeAll), which `pgliteEmptied` empties for each
 * case: emptying takes milliseconds, opening a PGlite seconds.
 */
export const openSharedPglite = async (): Promise<void> => {
  const scope = await Effect.runPromise(Scope.make())
  const context = await Effect.runPromise(
    Effect.gen(function* () {
      // PGlite creates itself in the empty directory: no template to make and copy for one PGlite.
      const dataDir = yield* Scope.provide(scope)(temporaryDirectory("taskmeter-pglite-"))
      return yield* Layer.buildWithScope(PgStore.clientEmbedded({ dataDir }), scope)
    })
  )
  shared = { context, scope }
}

/** Closes the file's PGlite and removes its template; call once its tests are done. */
export const closeSharedPglite = async (): Promise<void> => {
  const closing = shared
  shared = undefined
  if (closing !== undefined) await Effect.runPromise(Scope.close(closing.scope, Exit.void))
  await removeTemplate()
}

/**
 * The stores on the file's PGlite, migrated by the first case and emptied for each one after, with
 * its SqlClient for tampering. PGlite is one session: the cases of a file run one at a time.
 */
export const pgliteEmptied = Layer.unwrap(
  Effect.gen(function* () {
    if (shared === undefined) return yield* Effect.die(new Error("openSharedPglite has not run"))
    return Layer.mergeAll(
      PgStore.layerClient({}).pipe(Layer.provide(emptied), Layer.provideMerge(Layer.succeedContext(shared.context))),
      blobs
    )
  })
)
