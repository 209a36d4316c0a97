/**
 * StoreHealth on PostgreSQL: `check` reads the newest migration id (the store answers, and its
 * schema has every migration this release has); `queueDepth` counts unfinished tasks over the
 * partial indexes on them; `connections` counts this process's sessions in pg_stat_activity by
 * the application name its pool connects with.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { StoreHealth, TaskStatus } from "@taskmeter/kernel"
import type { StoreError } from "@taskmeter/kernel"
import * as Failures from "./Failures.ts"

export interface Options {
  /** The migrations table, and the highest migration id this release ships. */
  readonly migrationsTable: string
  readonly latestMigration: number
  /** The application name of this process's pool, and its size; undefined: not reported. */
  readonly pool?: { readonly applicationName: string; readonly maxConnections: number } | undefined
}

export const make = (options: Options) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const check: Effect.Effect<void, StoreError.StoreUnavailable | StoreHealth.MigrationsBehind> = Failures.run(
      "Reading the migrations",
      sql<{ readonly latest: number | null }>`SELECT max(migration_id) AS latest FROM ${sql(options.migrationsTable)}`
    ).pipe(
      Effect.flatMap(([row]) => {
        const latest = Number(row?.latest ?? 0)
        return latest >= options.latestMigration
          ? Effect.void
          : Effect.fail(
              new StoreHealth.MigrationsBehind({
                message: `The database has migrations up to ${latest}, this release needs ${options.latestMigration}: restart a server to migrate it.`
              })
            )
      })
    )
    const queueDepth = Failures.run(
      "Counting unfinished tasks",
      sql<{ readonly status: string; readonly model: string; readonly tasks: number }>`
        SELECT status, model, count(*)::int AS tasks FROM tasks
         WHERE status IN ('queued', 'submitting', 'running') OR status = 'reconciliation_required'
         GROUP BY status, model`
    ).pipe(
      Effect.map((rows) =>
        rows.flatMap((row): ReadonlyArray<StoreHealth.QueueDepth> => {
          const status = TaskStatus.TaskStatus.literals.find((literal) => literal === row.status)
          return status === undefined ? [] : [{ status, model: row.model, tasks: Number(row.tasks) }]
        })
      )
    )
    const pool = options.pool
    const connections: Effect.Effect<StoreHealth.Connections | undefined> =
      pool === undefined
        ? Effect.undefined
        : sql<{ readonly busy: number }>`
            SELECT count(*)::int AS busy FROM pg_stat_activity
             WHERE application_name = ${pool.applicationName} AND state IS DISTINCT FROM 'idle'`.pipe(
            // This statement's own session is busy with it.
            Effect.map(([row]) => ({ inUse: Math.max(0, Number(row?.busy ?? 1) - 1), max: pool.maxConnections })),
            Effect.orElseSucceed(() => undefined)
          )
    return StoreHealth.StoreHealth.of({ check, queueDepth, connections })
  })
