/**
 * Two processes (each its own pool) starting the PostgreSQL OAuthStore together on one empty
 * schema. The migrator locks its table for the run, but the table's creation comes before that
 * lock: both processes find no table and both create it, and PostgreSQL refuses the second
 * creation (a unique violation in its catalog) once the first commits. The migrator answers
 * that by looking again and going on when the table is there; this test holds both creations
 * at once so that the race happens on every run instead of now and then.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { PgStore } from "@taskmeter/storage-pg"
import { OAuthStore, OAuthStorePg } from "../src/index.ts"
import { admin, freshSchema, url } from "./support/TestDatabase.ts"

const T0 = new Date("2030-01-01T00:00:00.000Z")

/**
 * A session that creates the migrations table in a transaction it keeps open, so that every
 * other creation of that table waits on it, until `release` rolls it back. Returns once the
 * table is created, with the session's process id.
 */
const holdCreation = (schema: string) =>
  Effect.gen(function* () {
    const created = yield* Deferred.make<number>()
    const holding = yield* Effect.forkScoped(
      SqlClient.SqlClient.use((sql) =>
        sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`CREATE TABLE ${sql(OAuthStorePg.migrationsTable)} (migration_id integer)`
            const [session] = yield* sql<{ readonly pid: number }>`SELECT pg_backend_pid() AS pid`
            yield* Deferred.succeed(created, session!.pid)
            return yield* Effect.never
          })
        )
      ).pipe(Effect.provide(PgStore.client({ url, schema, maxConnections: 1 })))
    )
    const pid = yield* Effect.raceFirst(Deferred.await(created), Fiber.join(holding))
    return { pid, release: Fiber.interrupt(holding) }
  })

/** Waits until `count` sessions wait on the session `holder`. */
const awaitWaiters = (holder: number, count: number) =>
  admin(
    SqlClient.SqlClient.use(
      (sql) =>
        sql<{ readonly waiting: number }>`SELECT count(*)::int AS waiting FROM pg_stat_activity
      WHERE ${holder} = ANY(pg_blocking_pids(pid))`
    )
  ).pipe(
    Effect.orDie,
    Effect.repeat({ until: ([row]) => row!.waiting >= count, schedule: Schedule.spaced("20 millis") }),
    Effect.timeout("10 seconds")
  )

describe("OAuthStorePg started by two processes at once on an empty schema", () => {
  it.live("both start, the migrations run once, and each process sees the other's writes", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const schema = yield* freshSchema
        const holder = yield* holdCreation(schema)

        const start = () =>
          Layer.build(OAuthStorePg.layer.pipe(Layer.provide(PgStore.client({ url, schema, maxConnections: 2 }))))
        const starting = yield* Effect.forkChild(Effect.all([start(), start()], { concurrency: 2 }))
        yield* awaitWaiters(holder.pid, 2)
        yield* holder.release
        const [first, second] = yield* Fiber.join(starting)

        const client = {
          clientId: "mcpc_shared",
          secretHash: null,
          tokenEndpointAuthMethod: "none" as const,
          redirectUris: ["http://127.0.0.1/cb"],
          clientName: "Shared",
          metadata: {},
          createdAt: T0,
          unusedExpiresAt: null
        }
        yield* OAuthStore.OAuthStore.use((store) => store.insertClient(client)).pipe(Effect.provide(first))
        expect(
          yield* OAuthStore.OAuthStore.use((store) => store.getClient(client.clientId)).pipe(Effect.provide(second))
        ).toEqual(client)

        const recorded = yield* SqlClient.SqlClient.use(
          (sql) =>
            sql<{ readonly migration_id: number; readonly name: string }>`SELECT migration_id, name
          FROM ${sql(OAuthStorePg.migrationsTable)} ORDER BY migration_id`
        ).pipe(Effect.provide(PgStore.client({ url, schema, maxConnections: 1 })))
        const shipped = yield* Effect.orDie(OAuthStorePg.migrations)
        expect(recorded.map((row) => [row.migration_id, row.name])).toEqual(shipped.map(([id, name]) => [id, name]))
      })
    )
  )
})
