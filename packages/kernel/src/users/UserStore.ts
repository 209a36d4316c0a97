/**
 * Storage port for the console's users: a user (an email, unique without regard to case, its
 * password hash and flags), its memberships in accounts (owner or member; an account may have
 * several users), and one-time email tokens (verification, password reset, invitation).
 *
 * Tokens are stored only as the SHA-256 hash of their 256-bit secret, as API keys are; a store
 * never sees a secret or a password. `consumeToken` is the one way a token is used: exactly one
 * caller wins it, once, before it expires.
 *
 * Failed sign-ins are counted here too, per key (an email, a client address, a passkey), in
 * fixed windows, so that every process sharing the store shares the count (Users' throttle).
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { AccountId, UserId } from "../domain/Ids.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"

export type Role = "owner" | "member"

export interface UserRecord {
  readonly id: UserId
  /** As the user typed it (trimmed); compared without regard to case. */
  readonly email: string
  readonly emailVerifiedAt: Date | null
  /** Passwords.hash's self-describing string; null for a user without a password (passkeys only). */
  readonly passwordHash: string | null
  /** Marked by the operator (`taskmeter admin operator add`): may use the operator pages. */
  readonly operator: boolean
  readonly createdAt: Date
}

export interface Membership {
  readonly accountId: AccountId
  readonly userId: UserId
  readonly role: Role
  readonly createdAt: Date
}

/** A user of an account, with its role there. */
export interface Member {
  readonly user: UserRecord
  readonly role: Role
}

export type TokenPurpose = "verify-email" | "password-reset" | "invitation"

export interface EmailToken {
  /** Lower-case hex SHA-256 of the secret sent in the link. */
  readonly hash: string
  readonly purpose: TokenPurpose
  readonly email: string
  /** The user it is for; null for an invitation (the user does not exist yet). */
  readonly userId: UserId | null
  /** An invitation into an existing account; null: the new user gets an account of their own. */
  readonly accountId: AccountId | null
  readonly role: Role | null
  readonly createdAt: Date
  readonly expiresAt: Date
}

/** Failures counted for a key in the window that began at `start`. */
export interface FailureWindow {
  readonly key: string
  readonly start: Date
  readonly failures: number
}

export class UserStore extends Context.Service<
  UserStore,
  {
    /**
     * Inserts the user and its first membership together (the account exists); false, with
     * nothing written, when a user has this email in any case.
     */
    readonly insertUser: (user: UserRecord, membership: Membership) => Effect.Effect<boolean, StoreUnavailable>
    readonly getUser: (id: UserId) => Effect.Effect<UserRecord | undefined, StoreUnavailable>
    /** The user with this email, compared without regard to case. */
    readonly findByEmail: (email: string) => Effect.Effect<UserRecord | undefined, StoreUnavailable>
    /** The user's memberships, oldest first. */
    readonly memberships: (userId: UserId) => Effect.Effect<ReadonlyArray<Membership>, StoreUnavailable>
    /** The account's users, oldest membership first. */
    readonly members: (accountId: AccountId) => Effect.Effect<ReadonlyArray<Member>, StoreUnavailable>
    /** Sets the verification time unless already set; false for an unknown user. */
    readonly markVerified: (userId: UserId, at: Date) => Effect.Effect<boolean, StoreUnavailable>
    readonly setPasswordHash: (userId: UserId, passwordHash: string) => Effect.Effect<boolean, StoreUnavailable>
    readonly setOperator: (userId: UserId, operator: boolean) => Effect.Effect<boolean, StoreUnavailable>
    readonly insertToken: (token: EmailToken) => Effect.Effect<void, StoreUnavailable>
    /**
     * Uses the token with this hash and purpose if it is unused and `now` is before its expiry:
     * exactly one of concurrent callers gets it, and it is never given again. Undefined otherwise.
     */
    readonly consumeToken: (
      hash: string,
      purpose: TokenPurpose,
      now: Date
    ) => Effect.Effect<EmailToken | undefined, StoreUnavailable>
    /** The windows of these keys that began after `since`; a key without one is absent. */
    readonly signInFailures: (
      keys: ReadonlyArray<string>,
      since: Date
    ) => Effect.Effect<ReadonlyArray<FailureWindow>, StoreUnavailable>
    /**
     * Counts one failure for each key: in its window if that began after `since`, else in a new
     * window beginning `now`. Concurrent calls all count, none is lost. Deletes up to 100 windows
     * of other keys that began at or before `since`, so ended windows do not pile up.
     */
    readonly recordSignInFailure: (keys: ReadonlyArray<string>, now: Date, since: Date) => Effect.Effect<void, StoreUnavailable>
  }
>()("@taskmeter/kernel/UserStore") {}
