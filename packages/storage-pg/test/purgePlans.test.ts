/**
 * The purges that delete a batch picked by `LIMIT ... FOR UPDATE SKIP LOCKED` (finished webhook
 * deliveries, stale sign-in failures) delete it by `= ANY(ARRAY(...))`, which the planner must
 * answer from the primary key, and read only the batch among 30,000 kept rows under a server's
 * generic plan with current statistics. As `IN (...)`, a semi-join, the generic plan (its LIMIT
 * unknown, taken as a tenth of the table) hashed the batch and scanned the table.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { UserStore, WebhookStore } from "@taskmeter/kernel"
import type { PgStore } from "../src/index.ts"
import * as PgMaintenance from "../src/internal/PgMaintenance.ts"
import { rowsRead, withKeptPlans } from "./KeptPlans.ts"

const T0 = new Date("2030-01-01T00:00:00.000Z")

/**
 * `round` six times to settle the plans, `grow`, statistics brought up to date as PgMaintenance
 * does, then `round` measured: in one transaction with plans forced generic.
 */
const afterGrowth = <A>(
  round: (prefix: string) => Effect.Effect<A, unknown, PgStore.Stores | SqlClient.SqlClient>,
  grow: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>
) =>
  withKeptPlans(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO accounts (id, name, created_at) VALUES ('acct_purge', 'purge', ${T0})`
      for (let i = 0; i < 6; i++) yield* round(`warm${i}`)
      yield* grow(sql)
      yield* PgMaintenance.analyzeGrown
      return yield* round("grown")
    })
  )

describe("storage-pg on PostgreSQL: purges read their batch, not the table", () => {
  it.live(
    "purging 5 finished webhook deliveries reads 5 rows with 30,000 kept",
    () =>
      Effect.gen(function* () {
        const cutoff = new Date(T0.getTime() - 86_400_000)
        const purge = (prefix: string) =>
          SqlClient.SqlClient.use((sql) =>
            Effect.gen(function* () {
              yield* sql`INSERT INTO webhook_deliveries (id, account_id, url, task_id, event_type, task, occurred_at, status,
                  created_at, finished_at)
                SELECT 'old-' || ${prefix}::text || '-' || g, 'acct_purge', 'https://hooks.example', 'task_x', 'task.succeeded',
                  '{}', ${T0}, 'delivered', ${T0}, ${T0}::timestamptz - interval '10 days'
                FROM generate_series(1, 5) g`
              const { value, reads } = yield* rowsRead(
                ["webhook_deliveries"],
                WebhookStore.WebhookStore.use((store) => store.purgeFinished(cutoff, 10))
              )
              return { value, reads: reads.webhook_deliveries }
            })
          )
        const grown = yield* afterGrowth(
          purge,
          (sql) => sql`INSERT INTO webhook_deliveries (id, account_id, url, task_id, event_type, task, occurred_at, status,
              created_at, finished_at)
            SELECT 'kept-' || g, 'acct_purge', 'https://hooks.example', 'task_x', 'task.succeeded', '{}', ${T0}, 'delivered',
              ${T0}, ${T0}
            FROM generate_series(1, 30000) g`
        )
        expect(grown.value).toBe(5)
        // Each deleted row read twice at most (picked, then deleted by id); the semi-join read all 30,000.
        expect(grown.reads).toBeLessThanOrEqual(2 * 5)
      }),
    120_000
  )

  it.live(
    "a sign-in failure purging 3 stale windows reads a few rows with 30,000 live ones",
    () =>
      Effect.gen(function* () {
        const since = new Date(T0.getTime() - 900_000)
        const fail = (prefix: string) =>
          SqlClient.SqlClient.use((sql) =>
            Effect.gen(function* () {
              yield* sql`INSERT INTO sign_in_failures (key, window_start, failures)
                SELECT 'stale ' || ${prefix}::text || '-' || g, ${since}::timestamptz - interval '1 minute', 1
                FROM generate_series(1, 3) g`
              const failed = yield* rowsRead(
                ["sign_in_failures"],
                UserStore.UserStore.use((users) => users.recordSignInFailure([`email ${prefix}`, `address ${prefix}`], T0, since))
              )
              const [left] = yield* sql<{
                readonly n: string
              }>`SELECT count(*) AS n FROM sign_in_failures WHERE key LIKE 'stale %'`
              return { reads: failed.reads.sign_in_failures, left: Number(left!.n) }
            })
          )
        const grown = yield* afterGrowth(
          fail,
          (sql) => sql`INSERT INTO sign_in_failures (key, window_start, failures)
            SELECT 'address live-' || g, ${T0}, 1 FROM generate_series(1, 30000) g`
        )
        expect(grown.left).toBe(0)
        // The 3 stale windows, picked and deleted, and the 2 keys counted.
        expect(grown.reads).toBeLessThanOrEqual(3 * 2 + 2)
      }),
    120_000
  )
})
