/**
 * Test support: empties every table of the current schema but `keep` (the migrators' records)
 * and restarts its sequences, in one transaction: a migrated schema is then as fresh as a new one
 * for the next case, in milliseconds where creating and migrating one takes hundreds. Needs a
 * superuser (as the test databases have): foreign keys are not checked while the rows go.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

export const reset = (keep: ReadonlyArray<string>): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  SqlClient.SqlClient.use((sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`SET LOCAL session_replication_role = replica`
        const tables = yield* sql<{ readonly name: string }>`SELECT tablename AS name FROM pg_tables
          WHERE schemaname = current_schema() AND tablename NOT IN ${sql.in(keep)}`
        for (const table of tables) yield* sql`DELETE FROM ${sql(table.name)}`
        yield* sql`SELECT setval(format('%I.%I', schemaname, sequencename), start_value, false)
          FROM pg_sequences WHERE schemaname = current_schema()`
      })
    )
  )
