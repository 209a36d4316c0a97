/**
 * A price list's versions in `price_lists` (migration 0010; the chat list's in `chat_price_lists`,
 * migration 0018), each method one statement. `save` is
 * one INSERT of version `expected + 1`, only while the highest version is `expected`, with ON CONFLICT
 * DO NOTHING (a concurrent save of the same version waits, then inserts nothing); no row back is a
 * conflict. The other processes are told after the commit.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { PgTypes } from "@effect/sql-pg"
import { PriceStore } from "@taskmeter/kernel"
import * as Failures from "./Failures.ts"
import type { PriceWakeups } from "./Wakeups.ts"

type Int8 = bigint | number

interface PriceListRow {
  readonly version: Int8
  readonly list: unknown
  readonly created_at: Date
}

export const make = (wakeups: PriceWakeups, table: "price_lists" | "chat_price_lists" = "price_lists") =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const lists = sql(table)

    return PriceStore.PriceStore.of({
      current: Failures.run(
        "current price list",
        sql<PriceListRow>`SELECT version, list, created_at FROM ${lists} ORDER BY version DESC LIMIT 1`.pipe(
          Effect.map(([row]) =>
            row === undefined ? undefined : { version: Number(row.version), list: row.list, changedAt: row.created_at }
          )
        )
      ),

      version: Failures.run(
        "price list version",
        sql<{ readonly version: Int8 | null }>`SELECT max(version) AS version FROM ${lists}`.pipe(
          Effect.map(([row]) => (row?.version == null ? undefined : Number(row.version)))
        )
      ),

      save: (expectedVersion, list) => {
        const expected = expectedVersion ?? 0
        return Failures.run(
          "save price list",
          sql<{ readonly version: Int8 }>`INSERT INTO ${lists} (version, list)
            SELECT ${expected + 1}::bigint, ${PgTypes.jsonb(list)}
            WHERE coalesce((SELECT max(version) FROM ${lists}), 0) = ${expected}::bigint
            ON CONFLICT (version) DO NOTHING
            RETURNING version`
        ).pipe(
          Effect.flatMap(([row]) =>
            row === undefined
              ? Effect.fail(new PriceStore.PriceListConflict({ expectedVersion }))
              : Effect.as(wakeups.announce, { version: Number(row.version) })
          )
        )
      },

      subscribe: wakeups.subscribe
    })
  })
