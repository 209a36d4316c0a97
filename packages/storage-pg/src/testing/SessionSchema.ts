/**
 * Test support for a single-session database (PGlite): a new schema made the session's
 * search_path for as long as the layer lives, then dropped with everything in it. The tests
 * sharing the session must run one after another.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

export const layer = (schema: string): Layer.Layer<never, never, SqlClient.SqlClient> =>
  Layer.effectDiscard(
    Effect.acquireRelease(
      SqlClient.SqlClient.use((sql) => Effect.andThen(sql`CREATE SCHEMA ${sql(schema)}`, sql`SET search_path TO ${sql(schema)}`)),
      () =>
        SqlClient.SqlClient.use((sql) =>
          Effect.andThen(sql`SET search_path TO public`, sql`DROP SCHEMA ${sql(schema)} CASCADE`)
        ).pipe(Effect.orDie)
    ).pipe(Effect.orDie)
  )
