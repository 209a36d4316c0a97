/**
 * A PostgreSQL store in a schema of its own for one bench process (the chat benches' in-process
 * server and kernel), migrated when the layer builds and dropped when it closes.
 */
import { randomUUID } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { PgStore } from "@taskmeter/storage-pg"

const databaseUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"

export const scratchPgStore = (prefix: string) => {
  const schema = `${prefix}_${randomUUID().replaceAll("-", "").slice(0, 16)}`
  const dropSchemaAfter = Layer.effectDiscard(
    Effect.addFinalizer(() =>
      SqlClient.SqlClient.use((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`).pipe(
        Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 })),
        Effect.ignore
      )
    )
  )
  return PgStore.layerClient({ schema }).pipe(
    Layer.provide(PgStore.client({ url: databaseUrl, schema, maxConnections: 16 })),
    Layer.provide(dropSchemaAfter)
  )
}
