import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as Ids from "../../src/domain/Ids.ts"
import * as Sessions from "../../src/users/Sessions.ts"
import { SessionStore } from "../../src/users/SessionStore.ts"
import { UserStore } from "../../src/users/UserStore.ts"
import { makeAccount, T0 } from "../../src/testing/Fixtures.ts"

const MINUTE = 60_000
const options: Sessions.Options = { idleTimeoutMs: 30 * MINUTE, maxAgeMs: 120 * MINUTE }

const withSessions = Sessions.layer(options).pipe(Layer.provideMerge(MemoryStore.layer))

/** A user owning a new account, and a session of it made now. */
const signedIn = Effect.gen(function* () {
  const account = yield* makeAccount()
  const userId = Ids.makeUserId()
  yield* UserStore.use((store) =>
    store.insertUser(
      { id: userId, email: `${userId}@example.com`, emailVerifiedAt: null, passwordHash: null, operator: false, createdAt: T0 },
      { accountId: account.id, userId, role: "owner", createdAt: T0 }
    )
  )
  const sessions = yield* Sessions.Sessions
  return { sessions, userId, accountId: account.id, created: yield* sessions.create(userId, account.id) }
})

describe("Sessions", () => {
  it.effect("makes a new 256-bit secret each time, stores only its hash, and derives the CSRF token from it", () =>
    Effect.gen(function* () {
      const { sessions, userId, accountId, created } = yield* signedIn
      const again = yield* sessions.create(userId, accountId)
      expect(created.secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(again.secret).not.toBe(created.secret)
      expect(created.record.hash).toBe(createHash("sha256").update(created.secret).digest("hex"))
      const stored = yield* SessionStore.use((store) => store.findSession(created.record.hash))
      expect(JSON.stringify(stored)).not.toContain(created.secret)
      const live = yield* sessions.resolve(created.secret)
      expect(live?.csrfToken).toBe(created.csrfToken)
      expect(live?.role).toBe("owner")
      expect(again.csrfToken).not.toBe(created.csrfToken)
      expect(yield* sessions.resolve("x".repeat(43))).toBeUndefined()
      expect(yield* sessions.resolve("not a secret")).toBeUndefined()
    }).pipe(Effect.provide(withSessions))
  )

  it.effect("ends a session unused for the idle timeout, and keeps one in use alive", () =>
    Effect.gen(function* () {
      const { sessions, userId, accountId, created } = yield* signedIn
      const idle = yield* sessions.create(userId, accountId)
      for (let i = 0; i < 3; i++) {
        yield* TestClock.adjust(20 * MINUTE)
        expect(yield* sessions.resolve(created.secret)).toBeDefined()
      }
      expect(yield* sessions.resolve(idle.secret)).toBeUndefined()
    }).pipe(Effect.provide(withSessions))
  )

  it.effect("ends every session at its absolute end, however much it is used", () =>
    Effect.gen(function* () {
      const { sessions, created } = yield* signedIn
      for (let i = 0; i < 11; i++) {
        yield* TestClock.adjust(10 * MINUTE)
        expect(yield* sessions.resolve(created.secret)).toBeDefined()
      }
      yield* TestClock.adjust(10 * MINUTE)
      expect(yield* sessions.resolve(created.secret)).toBeUndefined()
    }).pipe(Effect.provide(withSessions))
  )

  it.effect("revokes one session, or all of a user's", () =>
    Effect.gen(function* () {
      const { sessions, userId, accountId, created } = yield* signedIn
      const second = yield* sessions.create(userId, accountId)
      const third = yield* sessions.create(userId, accountId)
      yield* sessions.revoke(created.secret)
      expect(yield* sessions.resolve(created.secret)).toBeUndefined()
      expect(yield* sessions.resolve(second.secret)).toBeDefined()
      expect(yield* sessions.revokeAll(userId)).toBe(2)
      expect(yield* sessions.resolve(second.secret)).toBeUndefined()
      expect(yield* sessions.resolve(third.secret)).toBeUndefined()
    }).pipe(Effect.provide(withSessions))
  )
})
