import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { SessionStore } from "@taskmeter/kernel"
import type { Ids } from "@taskmeter/kernel"
import * as Failures from "./Failures.ts"

interface SessionRow {
  readonly hash: string
  readonly user_id: string
  readonly account_id: string
  readonly created_at: Date
  readonly last_seen_at: Date
  readonly expires_at: Date
  readonly revoked_at: Date | null
}

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  return SessionStore.SessionStore.of({
    insertSession: (session) =>
      Failures.run(
        "insertSession",
        Effect.asVoid(sql`INSERT INTO sessions (hash, user_id, account_id, created_at, last_seen_at, expires_at, revoked_at)
          VALUES (${session.hash}, ${session.userId}, ${session.accountId}, ${session.createdAt}, ${session.lastSeenAt},
            ${session.expiresAt}, ${session.revokedAt}::timestamptz)`)
      ),

    findSession: (hash) =>
      Failures.run(
        "findSession",
        sql<SessionRow>`SELECT hash, user_id, account_id, created_at, last_seen_at, expires_at, revoked_at
          FROM sessions WHERE hash = ${hash}`.pipe(
          Effect.map((rows) => {
            const row = rows[0]
            return row === undefined
              ? undefined
              : {
                  hash: row.hash,
                  userId: row.user_id as Ids.UserId,
                  accountId: row.account_id as Ids.AccountId,
                  createdAt: row.created_at,
                  lastSeenAt: row.last_seen_at,
                  expiresAt: row.expires_at,
                  revokedAt: row.revoked_at
                }
          })
        )
      ),

    touchSession: (hash, at) =>
      Failures.run(
        "touchSession",
        Effect.asVoid(sql`UPDATE sessions SET last_seen_at = ${at}
          WHERE hash = ${hash} AND revoked_at IS NULL AND last_seen_at < ${at}`)
      ),

    revokeSession: (hash, at) =>
      Failures.run(
        "revokeSession",
        sql`UPDATE sessions SET revoked_at = coalesce(revoked_at, ${at}) WHERE hash = ${hash} RETURNING hash`.pipe(
          Effect.map((rows) => rows.length > 0)
        )
      ),

    revokeUserSessions: (userId, at) =>
      Failures.run(
        "revokeUserSessions",
        sql`UPDATE sessions SET revoked_at = ${at} WHERE user_id = ${userId} AND revoked_at IS NULL RETURNING hash`.pipe(
          Effect.map((rows) => rows.length)
        )
      )
  })
})
