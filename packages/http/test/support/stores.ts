/**
 * The store implementations every suite runs against: storage-memory, and storage-pg on the real
 * PostgreSQL at TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), each suite
 * in a schema of its own that is dropped afterwards. On a machine without PostgreSQL (see
 * test/Dependencies.ts; never under CI) storage-pg runs on a PGlite of the suite's own instead.
 */
import { randomUUID } from "node:crypto"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { BlobStore } from "@taskmeter/kernel"
import { MemoryStore } from "@taskmeter/storage-memory"
import { PgStore } from "@taskmeter/storage-pg"
import * as Dependencies from "../../../../test/Dependencies.ts"
import type { StoreUnderTest } from "./TestServer.ts"

export const databaseUrl = Dependencies.databaseUrl

const blobsInTemporaryDirectory = Layer.unwrap(
  Effect.map(
    Effect.acquireRelease(
      Effect.promise(() => mkdtemp(join(tmpdir(), "taskmeter-http-blobs-"))),
      (directory) => Effect.promise(() => rm(directory, { recursive: true, force: true }))
    ),
    BlobStore.layerFileSystem
  )
)

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
  Effect.tap(
    Effect.sync(() => schemaName(prefix)),
    (schema) => Effect.addFinalizer(() => dropSchema(schema))
  )

/** storage-pg in a fresh schema, dropped (after everything built on it) when the suite ends. */
const postgres = () => {
  const schema = schemaName("http")
  return Layer.mergeAll(PgStore.layer({ url: databaseUrl, schema, maxConnections: 4 }), blobsInTemporaryDirectory).pipe(
    Layer.provideMerge(Layer.effectDiscard(Effect.addFinalizer(() => dropSchema(schema))))
  )
}

/** storage-pg on a PGlite of its own in a temporary directory, for a machine without PostgreSQL. */
const pglite = () =>
  Layer.unwrap(
    Effect.map(
      Effect.acquireRelease(
        Effect.promise(() => mkdtemp(join(tmpdir(), "taskmeter-http-pglite-"))),
        (directory) => Effect.promise(() => rm(directory, { recursive: true, force: true }))
      ),
      (dataDir) => Layer.mergeAll(PgStore.layerEmbedded({ dataDir }), blobsInTemporaryDirectory)
    )
  )

const memory: StoreUnderTest = { name: "storage-memory", layer: () => MemoryStore.layer }

/** Whether the run has the real PostgreSQL (never false under CI: there the run fails first). */
export const postgresReachable = !Dependencies.isMissing("postgres")

export const stores: ReadonlyArray<StoreUnderTest> = [
  memory,
  postgresReachable
    ? { name: "storage-pg (PostgreSQL)", layer: postgres }
    : { name: "storage-pg (PGlite, in PostgreSQL's place)", layer: pglite }
]
