/**
 * An account's rows in `tasks` and `ledger_entries`, as their per-account indexes find them
 * (migration 0042): a statement names only the range of the account id's 8-byte hash, so the
 * planner weighs one condition as it did the id; `ownRows` then drops the rows of any other
 * account whose id shares the hash, reading a longer page until it holds `limit` of the account's.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"

export const hashOf = (sql: SqlClient.SqlClient, column: "t.account_id" | "account_id", accountId: string) =>
  sql`hashtextextended(${sql.literal(column)}, 0) = hashtextextended(${accountId}::text, 0)`

export const ownRows = <R extends { readonly account_id: string }, E, Q>(
  accountId: string,
  limit: number,
  read: (limit: number) => Effect.Effect<ReadonlyArray<R>, E, Q>
): Effect.Effect<ReadonlyArray<R>, E, Q> => {
  const attempt = (asked: number): Effect.Effect<ReadonlyArray<R>, E, Q> =>
    Effect.flatMap(read(asked), (rows) => {
      const own = rows.filter((row) => row.account_id === accountId)
      return own.length >= limit || rows.length < asked ? Effect.succeed(own.slice(0, limit)) : attempt(asked * 2)
    })
  return attempt(limit)
}
