import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { UserStore } from "@taskmeter/kernel"
import type { Ids } from "@taskmeter/kernel"
import * as Failures from "./Failures.ts"

interface UserRow {
  readonly id: string
  readonly email: string
  readonly email_verified_at: Date | null
  readonly password_hash: string | null
  readonly operator: boolean
  readonly created_at: Date
}

interface MembershipRow {
  readonly account_id: string
  readonly user_id: string
  readonly role: UserStore.Role
  readonly created_at: Date
}

interface TokenRow {
  readonly hash: string
  readonly purpose: UserStore.TokenPurpose
  readonly email: string
  readonly user_id: string | null
  readonly account_id: string | null
  readonly role: UserStore.Role | null
  readonly created_at: Date
  readonly expires_at: Date
}

const toUser = (row: UserRow): UserStore.UserRecord => ({
  id: row.id as Ids.UserId,
  email: row.email,
  emailVerifiedAt: row.email_verified_at,
  passwordHash: row.password_hash,
  operator: row.operator,
  createdAt: row.created_at
})

const userColumns = "id, email, email_verified_at, password_hash, operator, created_at"

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const one = (rows: ReadonlyArray<UserRow>) => (rows.length === 0 ? undefined : toUser(rows[0]!))
  const updated = (rows: ReadonlyArray<unknown>) => rows.length > 0

  return UserStore.UserStore.of({
    insertUser: (user, membership) =>
      Failures.run(
        "insertUser",
        sql<{ readonly id: string }>`WITH inserted AS (
            INSERT INTO users (id, email, email_verified_at, password_hash, operator, created_at)
            VALUES (${user.id}, ${user.email}, ${user.emailVerifiedAt}::timestamptz, ${user.passwordHash}::text,
              ${user.operator}, ${user.createdAt})
            ON CONFLICT ((lower(email))) DO NOTHING
            RETURNING id
          ), member AS (
            INSERT INTO account_members (account_id, user_id, role, created_at)
            SELECT ${membership.accountId}, id, ${membership.role}, ${membership.createdAt} FROM inserted
          )
          SELECT id FROM inserted`.pipe(Effect.map(updated))
      ),

    getUser: (id) =>
      Failures.run("getUser", sql<UserRow>`SELECT ${sql.literal(userColumns)} FROM users WHERE id = ${id}`.pipe(Effect.map(one))),

    findByEmail: (email) =>
      Failures.run(
        "findByEmail",
        sql<UserRow>`SELECT ${sql.literal(userColumns)} FROM users WHERE lower(email) = lower(${email})`.pipe(Effect.map(one))
      ),

    memberships: (userId) =>
      Failures.run(
        "memberships",
        sql<MembershipRow>`SELECT account_id, user_id, role, created_at FROM account_members
          WHERE user_id = ${userId} ORDER BY created_at, account_id`.pipe(
          Effect.map((rows) =>
            rows.map((row) => ({
              accountId: row.account_id as Ids.AccountId,
              userId: row.user_id as Ids.UserId,
              role: row.role,
              createdAt: row.created_at
            }))
          )
        )
      ),

    members: (accountId) =>
      Failures.run(
        "members",
        sql<UserRow & { readonly role: UserStore.Role }>`SELECT u.id, u.email, u.email_verified_at, u.password_hash,
            u.operator, u.created_at, m.role
          FROM account_members m JOIN users u ON u.id = m.user_id
          WHERE m.account_id = ${accountId} ORDER BY m.created_at, m.user_id`.pipe(
          Effect.map((rows) => rows.map((row) => ({ user: toUser(row), role: row.role })))
        )
      ),

    markVerified: (userId, at) =>
      Failures.run(
        "markVerified",
        sql`UPDATE users SET email_verified_at = coalesce(email_verified_at, ${at}) WHERE id = ${userId} RETURNING id`.pipe(
          Effect.map(updated)
        )
      ),

    setPasswordHash: (userId, passwordHash) =>
      Failures.run(
        "setPasswordHash",
        sql`UPDATE users SET password_hash = ${passwordHash} WHERE id = ${userId} RETURNING id`.pipe(Effect.map(updated))
      ),

    setOperator: (userId, operator) =>
      Failures.run(
        "setOperator",
        sql`UPDATE users SET operator = ${operator} WHERE id = ${userId} RETURNING id`.pipe(Effect.map(updated))
      ),

    insertToken: (token) =>
      Failures.run(
        "insertToken",
        Effect.asVoid(sql`INSERT INTO email_tokens (hash, purpose, email, user_id, account_id, role, created_at, expires_at)
          VALUES (${token.hash}, ${token.purpose}, ${token.email}, ${token.userId}::text, ${token.accountId}::text,
            ${token.role}::text, ${token.createdAt}, ${token.expiresAt})`)
      ),

    consumeToken: (hash, purpose, now) =>
      Failures.run(
        "consumeToken",
        sql<TokenRow>`UPDATE email_tokens SET used_at = ${now}
          WHERE hash = ${hash} AND purpose = ${purpose} AND used_at IS NULL AND expires_at > ${now}
          RETURNING hash, purpose, email, user_id, account_id, role, created_at, expires_at`.pipe(
          Effect.map((rows) => {
            const row = rows[0]
            return row === undefined
              ? undefined
              : {
                  hash: row.hash,
                  purpose: row.purpose,
                  email: row.email,
                  userId: row.user_id as Ids.UserId | null,
                  accountId: row.account_id as Ids.AccountId | null,
                  role: row.role,
                  createdAt: row.created_at,
                  expiresAt: row.expires_at
                }
          })
        )
      ),

    signInFailures: (keys, since) =>
      Failures.run(
        "signInFailures",
        sql<{ readonly key: string; readonly window_start: Date; readonly failures: number }>`SELECT key, window_start, failures
          FROM sign_in_failures WHERE key = ANY(${keys}::text[]) AND window_start > ${since}`.pipe(
          Effect.map((rows) => rows.map((row) => ({ key: row.key, start: row.window_start, failures: row.failures })))
        )
      ),

    // The purge leaves the keys counted alone: one statement may not touch a row twice.
    recordSignInFailure: (keys, now, since) =>
      Failures.run(
        "recordSignInFailure",
        Effect.asVoid(sql`WITH purged AS (
            DELETE FROM sign_in_failures WHERE key = ANY(ARRAY(
              SELECT key FROM sign_in_failures WHERE window_start <= ${since} AND key <> ALL(${keys}::text[])
              ORDER BY window_start LIMIT 100 FOR UPDATE SKIP LOCKED))
          )
          INSERT INTO sign_in_failures AS f (key, window_start, failures)
          SELECT DISTINCT k, ${now}::timestamptz, 1 FROM unnest(${keys}::text[]) AS k
          ON CONFLICT (key) DO UPDATE SET
            window_start = CASE WHEN f.window_start > ${since} THEN f.window_start ELSE excluded.window_start END,
            failures = CASE WHEN f.window_start > ${since} THEN f.failures + 1 ELSE 1 END`)
      )
  })
})
