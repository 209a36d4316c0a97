/**
 * The conformance suite of the UserStore and SessionStore ports (`suite(name, makeLayer)`), run
 * by every store: emails unique without regard to case, several users per account and accounts
 * per user, flags that keep their first time, one-time tokens used once (also when raced) and
 * never after expiry, sessions touched forward only, revoked one at a time or all of a user's, and
 * passkeys unique by credential id, their counters never lowered, removed only by their user, their challenges used once;
 * sign-in failures counted per key in fixed windows, none lost when raced, ended windows purged.
 */
import { createHash, randomBytes } from "node:crypto"
import { Effect } from "effect"
import type { Layer } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { AccountStore } from "../accounts/AccountStore.ts"
import * as Ids from "../domain/Ids.ts"
import type { AccountId, UserId } from "../domain/Ids.ts"
import { PasskeyStore } from "../users/PasskeyStore.ts"
import type { Passkey } from "../users/PasskeyStore.ts"
import { SessionStore } from "../users/SessionStore.ts"
import type { SessionRecord } from "../users/SessionStore.ts"
import { UserStore } from "../users/UserStore.ts"
import type { EmailToken, Role, UserRecord } from "../users/UserStore.ts"
import { at, makeAccount, T0 } from "./Fixtures.ts"

export type UserStores = AccountStore | UserStore | SessionStore | PasskeyStore

const hash = () => createHash("sha256").update(randomBytes(32)).digest("hex")

const newUser = (email: string): UserRecord => ({
  id: Ids.makeUserId(),
  email,
  emailVerifiedAt: null,
  passwordHash: "scrypt$1$1$1$AA$AA",
  operator: false,
  createdAt: T0
})

const addUser = (email: string, accountId?: AccountId, role: Role = "owner") =>
  Effect.gen(function* () {
    const store = yield* UserStore
    const account = accountId ?? (yield* makeAccount()).id
    const user = newUser(email)
    expect(yield* store.insertUser(user, { accountId: account, userId: user.id, role, createdAt: T0 })).toBe(true)
    return { user, accountId: account }
  })

const token = (fields: Partial<EmailToken> & Pick<EmailToken, "purpose">): EmailToken => ({
  hash: hash(),
  email: "ada@example.com",
  userId: null,
  accountId: null,
  role: null,
  createdAt: T0,
  expiresAt: at(3600),
  ...fields
})

const passkey = (userId: UserId, credentialId = randomBytes(16).toString("base64url")): Passkey => ({
  credentialId,
  userId,
  name: "Laptop",
  publicKey: new Uint8Array(randomBytes(77)),
  counter: 0,
  transports: ["internal", "hybrid"],
  createdAt: T0,
  lastUsedAt: null
})

const session = (userId: UserId, accountId: AccountId): SessionRecord => ({
  hash: hash(),
  userId,
  accountId,
  createdAt: T0,
  lastSeenAt: T0,
  expiresAt: at(86_400),
  revokedAt: null
})

export const suite = (name: string, makeLayer: () => Layer.Layer<UserStores, unknown>): void => {
  describe(`${name} UserStore and SessionStore conformance`, () => {
    const test = (title: string, body: Effect.Effect<void, unknown, UserStores>) =>
      it.live(title, () => Effect.provide(body, makeLayer()))

    test(
      "an email is unique without regard to case, and a refused user leaves nothing behind",
      Effect.gen(function* () {
        const store = yield* UserStore
        const { user } = yield* addUser("Ada@Example.com")
        const account = yield* makeAccount()
        const twin = newUser("ada@EXAMPLE.com")
        expect(yield* store.insertUser(twin, { accountId: account.id, userId: twin.id, role: "owner", createdAt: T0 })).toBe(
          false
        )
        expect(yield* store.getUser(twin.id)).toBeUndefined()
        expect(yield* store.memberships(twin.id)).toEqual([])
        expect(yield* store.findByEmail("ADA@example.COM")).toEqual(user)
        expect(yield* store.findByEmail("bob@example.com")).toBeUndefined()
      })
    )

    test(
      "an account holds several users, each with its role, and lists them",
      Effect.gen(function* () {
        const store = yield* UserStore
        const { user: owner, accountId } = yield* addUser("owner@example.com")
        const { user: member } = yield* addUser("member@example.com", accountId, "member")
        expect((yield* store.memberships(owner.id)).map((m) => [m.accountId, m.role])).toEqual([[accountId, "owner"]])
        expect((yield* store.memberships(member.id)).map((m) => [m.accountId, m.role])).toEqual([[accountId, "member"]])
        const members = (yield* store.members(accountId)).map((m) => [m.user, m.role] as const)
        expect(members.sort(([a], [b]) => a.email.localeCompare(b.email))).toEqual([
          [member, "member"],
          [owner, "owner"]
        ])
        expect(yield* store.members((yield* makeAccount()).id)).toEqual([])
      })
    )

    test(
      "verification keeps its first time; password and operator flag change; unknown users answer false",
      Effect.gen(function* () {
        const store = yield* UserStore
        const { user } = yield* addUser("ada@example.com")
        expect(yield* store.markVerified(user.id, at(10))).toBe(true)
        expect(yield* store.markVerified(user.id, at(20))).toBe(true)
        expect(yield* store.setPasswordHash(user.id, "scrypt$2$2$2$BB$BB")).toBe(true)
        expect(yield* store.setOperator(user.id, true)).toBe(true)
        expect(yield* store.getUser(user.id)).toEqual({
          ...user,
          emailVerifiedAt: at(10),
          passwordHash: "scrypt$2$2$2$BB$BB",
          operator: true
        })
        const nobody = Ids.makeUserId()
        expect(yield* store.markVerified(nobody, at(10))).toBe(false)
        expect(yield* store.setPasswordHash(nobody, "x")).toBe(false)
        expect(yield* store.setOperator(nobody, true)).toBe(false)
      })
    )

    test(
      "a token is used once, for its purpose only, and never at or after its expiry",
      Effect.gen(function* () {
        const store = yield* UserStore
        const { user, accountId } = yield* addUser("ada@example.com")
        const verify = token({ purpose: "verify-email", userId: user.id })
        const invitation = token({ purpose: "invitation", accountId, role: "member" })
        const late = token({ purpose: "password-reset", userId: user.id })
        for (const each of [verify, invitation, late]) yield* store.insertToken(each)
        expect(yield* store.consumeToken(verify.hash, "password-reset", at(1))).toBeUndefined()
        expect(yield* store.consumeToken(verify.hash, "verify-email", at(1))).toEqual(verify)
        expect(yield* store.consumeToken(verify.hash, "verify-email", at(2))).toBeUndefined()
        expect(yield* store.consumeToken(invitation.hash, "invitation", at(1))).toEqual(invitation)
        expect(yield* store.consumeToken(late.hash, "password-reset", at(3600))).toBeUndefined()
        expect(yield* store.consumeToken(hash(), "verify-email", at(1))).toBeUndefined()
      })
    )

    test(
      "of callers racing for one token, exactly one gets it",
      Effect.gen(function* () {
        const store = yield* UserStore
        const { user } = yield* addUser("ada@example.com")
        const reset = token({ purpose: "password-reset", userId: user.id })
        yield* store.insertToken(reset)
        const answers = yield* Effect.all(
          Array.from({ length: 8 }, () => store.consumeToken(reset.hash, "password-reset", at(1))),
          { concurrency: "unbounded" }
        )
        expect(answers.filter((answer) => answer !== undefined)).toHaveLength(1)
      })
    )

    test(
      "a session is found by its hash and touched forward only, and not once revoked",
      Effect.gen(function* () {
        const store = yield* SessionStore
        const { user, accountId } = yield* addUser("ada@example.com")
        const one = session(user.id, accountId)
        yield* store.insertSession(one)
        expect(yield* store.findSession(one.hash)).toEqual(one)
        yield* store.touchSession(one.hash, at(120))
        yield* store.touchSession(one.hash, at(60))
        expect((yield* store.findSession(one.hash))?.lastSeenAt).toEqual(at(120))
        expect(yield* store.revokeSession(one.hash, at(130))).toBe(true)
        expect(yield* store.revokeSession(one.hash, at(140))).toBe(true)
        yield* store.touchSession(one.hash, at(200))
        expect(yield* store.findSession(one.hash)).toEqual({ ...one, lastSeenAt: at(120), revokedAt: at(130) })
        expect(yield* store.revokeSession(hash(), at(140))).toBe(false)
        expect(yield* store.findSession(hash())).toBeUndefined()
      })
    )

    test(
      "revoking a user's sessions ends every live one of that user and no one else's",
      Effect.gen(function* () {
        const store = yield* SessionStore
        const { user: ada, accountId } = yield* addUser("ada@example.com")
        const { user: bob } = yield* addUser("bob@example.com", accountId, "member")
        const adas = [session(ada.id, accountId), session(ada.id, accountId), session(ada.id, accountId)]
        const bobs = session(bob.id, accountId)
        for (const each of [...adas, bobs]) yield* store.insertSession(each)
        yield* store.revokeSession(adas[0]!.hash, at(5))
        expect(yield* store.revokeUserSessions(ada.id, at(10))).toBe(2)
        expect((yield* store.findSession(adas[0]!.hash))?.revokedAt).toEqual(at(5))
        expect((yield* store.findSession(adas[2]!.hash))?.revokedAt).toEqual(at(10))
        expect((yield* store.findSession(bobs.hash))?.revokedAt).toBeNull()
        expect(yield* store.revokeUserSessions(ada.id, at(20))).toBe(0)
      })
    )

    test(
      "a passkey is unique by credential id, found by it and listed per user, its counter never lowered",
      Effect.gen(function* () {
        const store = yield* PasskeyStore
        const { user: ada } = yield* addUser("ada@example.com")
        const { user: bob } = yield* addUser("bob@example.com")
        const first = passkey(ada.id)
        const second = { ...passkey(ada.id), createdAt: at(5) }
        expect(yield* store.insertPasskey(first)).toBe(true)
        expect(yield* store.insertPasskey(second)).toBe(true)
        expect(yield* store.insertPasskey({ ...passkey(bob.id), credentialId: first.credentialId })).toBe(false)
        expect(yield* store.findPasskey(first.credentialId)).toEqual(first)
        expect((yield* store.listPasskeys(ada.id)).map((p) => p.credentialId)).toEqual([first.credentialId, second.credentialId])
        expect(yield* store.listPasskeys(bob.id)).toEqual([])
        yield* store.recordUse(first.credentialId, 7, at(10))
        yield* store.recordUse(first.credentialId, 3, at(20))
        expect(yield* store.findPasskey(first.credentialId)).toEqual({ ...first, counter: 7, lastUsedAt: at(20) })
        expect(yield* store.findPasskey("unknown")).toBeUndefined()
      })
    )

    test(
      "a user removes a passkey of theirs, named as they named it, and no other user's",
      Effect.gen(function* () {
        const store = yield* PasskeyStore
        const { user: ada } = yield* addUser("ada@example.com")
        const { user: bob } = yield* addUser("bob@example.com")
        const phone = { ...passkey(ada.id), name: "Phone — Ada's 📱" }
        const laptop = { ...passkey(ada.id), createdAt: at(5) }
        const bobs = passkey(bob.id)
        for (const each of [phone, laptop, bobs]) expect(yield* store.insertPasskey(each)).toBe(true)
        expect((yield* store.listPasskeys(ada.id)).map((p) => p.name)).toEqual(["Phone — Ada's 📱", "Laptop"])
        expect(yield* store.deletePasskey(ada.id, bobs.credentialId)).toBe(false)
        expect(yield* store.deletePasskey(ada.id, "unknown")).toBe(false)
        expect(yield* store.findPasskey(bobs.credentialId)).toEqual(bobs)
        expect(yield* store.deletePasskey(ada.id, phone.credentialId)).toBe(true)
        expect(yield* store.deletePasskey(ada.id, phone.credentialId)).toBe(false)
        expect(yield* store.findPasskey(phone.credentialId)).toBeUndefined()
        expect(yield* store.listPasskeys(ada.id)).toEqual([laptop])
      })
    )

    test(
      "a passkey challenge is used once, for its purpose, before its expiry, by one of racing callers",
      Effect.gen(function* () {
        const store = yield* PasskeyStore
        const { user } = yield* addUser("ada@example.com")
        const registration = {
          hash: hash(),
          purpose: "registration" as const,
          userId: user.id,
          createdAt: T0,
          expiresAt: at(300)
        }
        const signIn = { hash: hash(), purpose: "authentication" as const, userId: null, createdAt: T0, expiresAt: at(300) }
        yield* store.insertChallenge(registration)
        yield* store.insertChallenge(signIn)
        expect(yield* store.consumeChallenge(registration.hash, "authentication", at(1))).toBeUndefined()
        expect(yield* store.consumeChallenge(signIn.hash, "authentication", at(300))).toBeUndefined()
        const answers = yield* Effect.all(
          Array.from({ length: 6 }, () => store.consumeChallenge(registration.hash, "registration", at(1))),
          { concurrency: "unbounded" }
        )
        expect(answers.filter((answer) => answer !== undefined)).toEqual([registration])
      })
    )

    test(
      "sign-in failures count per key in a window, a new one after it ends, none lost when raced",
      Effect.gen(function* () {
        const store = yield* UserStore
        expect(yield* store.signInFailures(["email a", "address 1"], T0)).toEqual([])
        yield* store.recordSignInFailure(["email a", "address 1"], at(10), at(-890))
        yield* Effect.all(
          Array.from({ length: 8 }, (_, i) => store.recordSignInFailure(["address 1"], at(20 + i), at(20 + i - 900))),
          { concurrency: "unbounded" }
        )
        const windows = yield* store.signInFailures(["email a", "address 1", "email b"], at(-800))
        expect([...windows].sort((a, b) => a.key.localeCompare(b.key))).toEqual([
          { key: "address 1", start: at(10), failures: 9 },
          { key: "email a", start: at(10), failures: 1 }
        ])
        // Past the window (it began at or before `since`): not reported, and restarted by a failure.
        expect(yield* store.signInFailures(["email a"], at(10))).toEqual([])
        yield* store.recordSignInFailure(["email a"], at(910), at(10))
        expect(yield* store.signInFailures(["email a", "address 1"], at(10))).toEqual([
          { key: "email a", start: at(910), failures: 1 }
        ])
      })
    )

    test(
      "a failure purges ended windows of other keys, and keeps live ones",
      Effect.gen(function* () {
        const store = yield* UserStore
        yield* store.recordSignInFailure(["old"], T0, at(-900))
        yield* store.recordSignInFailure(["live"], at(500), at(-400))
        yield* store.recordSignInFailure(["new"], at(901), at(1))
        expect((yield* store.signInFailures(["old", "live", "new"], at(-1))).map((w) => w.key).sort()).toEqual(["live", "new"])
      })
    )
  })
}
