/**
 * The PostgreSQL OAuthStore against the machine's PostgreSQL (TEST_DATABASE_URL, as CI sets it),
 * each case in a fresh schema dropped afterwards, with a pool of four connections so that the
 * concurrency cases really race.
 */
import { randomUUID } from "node:crypto"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { PgStore } from "@taskmeter/storage-pg"
import { OAuthStorePg } from "../src/index.ts"
import { OAuthStoreConformance } from "../src/testing/index.ts"

const url = process.env["TEST_DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

/** A schema of its own, created before the store and dropped when the layer closes. */
const freshSchema = (schema: string) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE SCHEMA ${sql(schema)}`
    yield* Effect.addFinalizer(() => Effect.orDie(sql`DROP SCHEMA ${sql(schema)} CASCADE`))
  }))

OAuthStoreConformance.suite("PostgreSQL", () => {
  const schema = `test_oauth_${randomUUID().replaceAll("-", "").slice(0, 16)}`
  return OAuthStorePg.layer.pipe(
    Layer.provide(freshSchema(schema)),
    Layer.provide(PgStore.client({ url, schema, maxConnections: 4 }))
  )
})
