/**
 * The store implementations every suite runs against: storage-memory always, and storage-pg on
 * the real PostgreSQL at TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test)
 * when it answers, each suite in a schema of its own that is dropped afterwards. A PostgreSQL
 * that does not answer is skipped with the reason printed.
 */
import { randomUUID } from "node:crypto"
import { mkdtemp, rm } from "node:fs/promises"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { BlobStore } from "@taskmeter/kernel"
import { MemoryStore } from "@taskmeter/storage-memory"
import { PgStore } from "@taskmeter/storage-pg"
import type { StoreUnderTest } from "./TestServer.ts"

export const databaseUrl = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"

const answers = (url: string): Promise<boolean> =>
  new Promise((resolve) => {
    const { hostname, port } = new URL(url)
    const socket = connect({ host: hostname, port: Number(port || 5432) })
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(1000, () => done(false))
    socket.once("connect", () => done(true))
    socket.once("error", () => done(false))
  })

const blobsInTemporaryDirectory = Layer.unwrap(Effect.map(
  Effect.acquireRelease(
    Effect.promise(() => mkdtemp(join(tmpdir(), "taskmeter-http-blobs-"))),
    (directory) => Effect.promise(() => rm(directory, { recursive: true, force: true }))
  ),
  BlobStore.layerFileSystem
))

/** A schema name of the test database no other test uses: `<prefix>_` and 20 hex digits. */
export const schemaName = (prefix: string): string => `${prefix}_${randomUUID().replaceAll("-", "").slice(0, 20)}`

/** Drops `schema` from the test database, with everything in it. */
export const dropSchema = (schema: string): Effect.Effect<void> =>
  SqlClient.SqlClient.use((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 })),
    Effect.orDie,
    Effect.asVoid
  )

/** A fresh schema name, dropped when the scope closes. */
export const freshSchema = (prefix: string) =>
  Effect.tap(Effect.sync(() => schemaName(prefix)), (schema) => Effect.addFinalizer(() => dropSchema(schema)))

/** storage-pg in a fresh schema, dropped (after everything built on it) when the suite ends. */
const postgres = () => {
  const schema = schemaName("http")
  return Layer.mergeAll(PgStore.layer({ url: databaseUrl, schema, maxConnections: 4 }), blobsInTemporaryDirectory).pipe(
    Layer.provideMerge(Layer.effectDiscard(Effect.addFinalizer(() => dropSchema(schema))))
  )
}

const memory: StoreUnderTest = { name: "storage-memory", layer: () => MemoryStore.layer }

export const postgresReachable = await answers(databaseUrl)
if (!postgresReachable) {
  const reason = `no PostgreSQL answers at ${new URL(databaseUrl).host}`
  // CI provides the database: there its absence is a failure, not a reason to test less.
  if (process.env.CI) throw new Error(`The http suites need PostgreSQL under CI: ${reason}.`)
  console.warn(`Skipping the storage-pg runs of the http suites: ${reason}.`)
}

export const stores: ReadonlyArray<StoreUnderTest> = postgresReachable
  ? [memory, { name: "storage-pg (PostgreSQL)", layer: postgres }]
  : [memory]
