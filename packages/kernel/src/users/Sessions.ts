/**
 * Console sessions over the SessionStore. `create` makes a new secret (256 random bits,
 * base64url) at every sign-in, so a session id planted before sign-in never becomes a signed-in
 * one; `resolve` answers the live session for a presented secret: not revoked, seen within the
 * idle timeout, before its absolute end, its user still a member of its account. Each session's
 * CSRF token is derived from its secret (an HMAC under a fixed label), so only the holder of the
 * cookie can know it and nothing more is stored.
 */
import { createHash, createHmac, randomBytes } from "node:crypto"
import { Clock, Context, Effect, Layer } from "effect"
import type { AccountId, UserId } from "../domain/Ids.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import { SessionStore } from "./SessionStore.ts"
import type { SessionRecord } from "./SessionStore.ts"
import { UserStore } from "./UserStore.ts"
import type { Role, UserRecord } from "./UserStore.ts"

export interface Options {
  /** A session unused this long ends. Default 7 days. */
  readonly idleTimeoutMs: number
  /** A session ends this long after sign-in, however used. Default 30 days. */
  readonly maxAgeMs: number
}

export const defaultOptions: Options = { idleTimeoutMs: 7 * 24 * 3600_000, maxAgeMs: 30 * 24 * 3600_000 }

/** lastSeenAt is written at most once a minute (or a quarter of a shorter idle timeout). */
const touchIntervalOf = (options: Options): number => Math.min(60_000, options.idleTimeoutMs / 4)

export interface CreatedSession {
  /** The cookie's value; never stored. */
  readonly secret: string
  readonly record: SessionRecord
  readonly csrfToken: string
}

/** A live session with its user and the user's role in the session's account. */
export interface LiveSession {
  readonly record: SessionRecord
  readonly user: UserRecord
  readonly role: Role
  readonly csrfToken: string
}

const SECRET_FORMAT = /^[A-Za-z0-9_-]{43}$/

export const hashOf = (secret: string): string => createHash("sha256").update(secret).digest("hex")

export const csrfTokenOf = (secret: string): string => createHmac("sha256", secret).update("taskmeter csrf").digest("base64url")

export class Sessions extends Context.Service<
  Sessions,
  {
    readonly create: (userId: UserId, accountId: AccountId) => Effect.Effect<CreatedSession, StoreUnavailable>
    /** The live session for a presented secret; undefined for a malformed, unknown, revoked or expired one. */
    readonly resolve: (secret: string) => Effect.Effect<LiveSession | undefined, StoreUnavailable>
    readonly revoke: (secret: string) => Effect.Effect<void, StoreUnavailable>
    /** "Sign out everywhere": every session of the user. */
    readonly revokeAll: (userId: UserId) => Effect.Effect<number, StoreUnavailable>
  }
>()("@taskmeter/kernel/Sessions") {}

export const make = (options: Options = defaultOptions): Effect.Effect<Sessions["Service"], never, SessionStore | UserStore> =>
  Effect.gen(function* () {
    const store = yield* SessionStore
    const users = yield* UserStore
    const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis))
    const touchInterval = touchIntervalOf(options)

    const live = (record: SessionRecord, at: Date): boolean =>
      record.revokedAt === null &&
      at.getTime() < record.expiresAt.getTime() &&
      at.getTime() - record.lastSeenAt.getTime() < options.idleTimeoutMs

    return Sessions.of({
      create: (userId, accountId) =>
        Effect.gen(function* () {
          const at = yield* now
          const secret = randomBytes(32).toString("base64url")
          const record: SessionRecord = {
            hash: hashOf(secret),
            userId,
            accountId,
            createdAt: at,
            lastSeenAt: at,
            expiresAt: new Date(at.getTime() + options.maxAgeMs),
            revokedAt: null
          }
          yield* store.insertSession(record)
          return { secret, record, csrfToken: csrfTokenOf(secret) }
        }),
      resolve: (secret) =>
        Effect.gen(function* () {
          if (!SECRET_FORMAT.test(secret)) return undefined
          const at = yield* now
          const record = yield* store.findSession(hashOf(secret))
          if (record === undefined || !live(record, at)) return undefined
          const user = yield* users.getUser(record.userId)
          const membership = (yield* users.memberships(record.userId)).find((m) => m.accountId === record.accountId)
          if (user === undefined || membership === undefined) return undefined
          if (at.getTime() - record.lastSeenAt.getTime() >= touchInterval) yield* store.touchSession(record.hash, at)
          return { record, user, role: membership.role, csrfToken: csrfTokenOf(secret) }
        }),
      revoke: (secret) => Effect.flatMap(now, (at) => Effect.asVoid(store.revokeSession(hashOf(secret), at))),
      revokeAll: (userId) => Effect.flatMap(now, (at) => store.revokeUserSessions(userId, at))
    })
  })

export const layer = (options: Options = defaultOptions): Layer.Layer<Sessions, never, SessionStore | UserStore> =>
  Layer.effect(Sessions, make(options))
