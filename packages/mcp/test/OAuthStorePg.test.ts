/**
 * The PostgreSQL OAuthStore against the machine's PostgreSQL (TEST_DATABASE_URL, as CI sets it),
 * each case in a fresh schema dropped afterwards, with a pool of four connections so that the
 * concurrency cases really race.
 */
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { PgStore } from "@taskmeter/storage-pg"
import { OAuthStore, OAuthStorePg } from "../src/index.ts"
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

describe("PostgreSQL OAuthStore over tables made by an earlier version", () => {
  it.live("adds unused_expires_at, and keeps the clients registered before it", () => {
    const schema = `test_oauth_${randomUUID().replaceAll("-", "").slice(0, 16)}`
    const legacyClient = Layer.effectDiscard(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(`CREATE TABLE oauth_clients (
        client_id text PRIMARY KEY, secret_hash text, token_endpoint_auth_method text NOT NULL,
        redirect_uris text[] NOT NULL, client_name text, metadata jsonb NOT NULL, created_at timestamptz NOT NULL)`)
      yield* sql`INSERT INTO oauth_clients VALUES ('mcpc_legacy', NULL, 'none', ARRAY['http://127.0.0.1/cb'], 'Old',
        '{}'::jsonb, '2020-01-01T00:00:00Z')`
    }))
    return Effect.gen(function*() {
      const store = yield* OAuthStore.OAuthStore
      expect(yield* store.getClient("mcpc_legacy")).toMatchObject({ clientName: "Old", unusedExpiresAt: null })
      yield* store.purgeExpired(new Date("2040-01-01T00:00:00Z"))
      expect(yield* store.getClient("mcpc_legacy")).toBeDefined()
    }).pipe(Effect.provide(OAuthStorePg.layer.pipe(
      Layer.provide(legacyClient),
      Layer.provide(freshSchema(schema)),
      Layer.provide(PgStore.client({ url, schema, maxConnections: 1 }))
    )))
  })
})
