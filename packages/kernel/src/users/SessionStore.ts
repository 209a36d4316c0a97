/**
 * Storage port for console sessions. A session is found by the SHA-256 hash of its secret (the
 * cookie's value, 256 random bits), so a leaked table signs no one in. The store keeps times; the
 * kernel (Sessions) judges idle and absolute expiry against them.
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { AccountId, UserId } from "../domain/Ids.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"

export interface SessionRecord {
  /** Lower-case hex SHA-256 of the secret. */
  readonly hash: string
  readonly userId: UserId
  /** The account the session acts for (one of the user's memberships). */
  readonly accountId: AccountId
  readonly createdAt: Date
  /** The last request seen, moved forward at most once a minute (Sessions). */
  readonly lastSeenAt: Date
  /** The absolute end, fixed at creation. */
  readonly expiresAt: Date
  readonly revokedAt: Date | null
}

export class SessionStore extends Context.Service<
  SessionStore,
  {
    readonly insertSession: (session: SessionRecord) => Effect.Effect<void, StoreUnavailable>
    /** The session with this hash, revoked ones included. */
    readonly findSession: (hash: string) => Effect.Effect<SessionRecord | undefined, StoreUnavailable>
    /** Moves lastSeenAt forward to `at` (never back) on a session not revoked. */
    readonly touchSession: (hash: string, at: Date) => Effect.Effect<void, StoreUnavailable>
    /** Revokes one session; false when there is none (revoking twice keeps the first time). */
    readonly revokeSession: (hash: string, at: Date) => Effect.Effect<boolean, StoreUnavailable>
    /** Revokes every live session of the user; how many it revoked. */
    readonly revokeUserSessions: (userId: UserId, at: Date) => Effect.Effect<number, StoreUnavailable>
  }
>()("@taskmeter/kernel/SessionStore") {}
