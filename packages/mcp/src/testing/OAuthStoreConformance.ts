/**
 * The conformance suite every OAuthStore passes (`suite(name, makeLayer)`): each method, expiry
 * against the given `now`, and the port's concurrency promises (one winner for a sign-in, a code, a
 * rotation; reuse revokes; no more registrations than the limits). Each case gets a fresh store.
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import type { Layer } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { Ids } from "@taskmeter/kernel"
import { OAuthStore } from "../OAuthStore.ts"
import type { AuthorizationCode, NewTokens, PendingAuthorization, RegisteredClient, RegistrationWindow } from "../OAuthStore.ts"

const T0 = new Date("2030-01-01T00:00:00.000Z")
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000)
const hash = () => randomUUID().replace(/-/g, "").padEnd(64, "0")

const pendingAt = (overrides: Partial<PendingAuthorization> = {}): PendingAuthorization => ({
  id: randomUUID(),
  csrfHash: hash(),
  clientId: "mcpc_test",
  clientName: "Test client",
  clientVerified: false,
  redirectUri: "http://127.0.0.1:9000/callback",
  state: "s1",
  codeChallenge: "c".repeat(43),
  scopes: ["jobs:create", "jobs:read"],
  resource: "https://api.example.com/mcp",
  failedAttempts: 0,
  createdAt: T0,
  expiresAt: at(600),
  ...overrides
})

const codeAt = (overrides: Partial<AuthorizationCode> = {}): AuthorizationCode => ({
  hash: hash(),
  grantId: randomUUID(),
  clientId: "mcpc_test",
  redirectUri: "http://127.0.0.1:9000/callback",
  codeChallenge: "c".repeat(43),
  accountId: Ids.makeAccountId(),
  apiKeyId: Ids.makeApiKeyId(),
  scopes: ["jobs:read", "usage:read"],
  resource: "https://api.example.com/mcp",
  createdAt: T0,
  expiresAt: at(300),
  redeemedAt: null,
  ...overrides
})

const tokensAt = (from: Date): NewTokens => ({
  accessHash: hash(),
  accessExpiresAt: new Date(from.getTime() + 3600_000),
  refreshHash: hash(),
  refreshExpiresAt: new Date(from.getTime() + 30 * 86400_000),
  scopes: ["jobs:read"]
})

const clientAt = (overrides: Partial<RegisteredClient> = {}): RegisteredClient => ({
  clientId: `mcpc_${randomUUID()}`,
  secretHash: null,
  tokenEndpointAuthMethod: "none",
  redirectUris: ["http://127.0.0.1:9000/callback"],
  clientName: "Test client",
  metadata: { redirect_uris: ["http://127.0.0.1:9000/callback"] },
  createdAt: T0,
  unusedExpiresAt: at(86400),
  ...overrides
})

/** The registration window of the first hour after T0. */
const windowOf = (source: string, limits: { readonly perSource: number; readonly total: number }): RegistrationWindow => ({
  source,
  start: T0,
  end: at(3600),
  ...limits
})

/** A code redeemed at T0 and the tokens it issued. */
const grantFixture = Effect.gen(function* () {
  const store = yield* OAuthStore
  const code = codeAt()
  yield* store.insertCode(code)
  const tokens = tokensAt(T0)
  const redemption = yield* store.redeemCode(code.hash, T0, tokens)
  expect(redemption._tag).toBe("Redeemed")
  return { code, tokens }
})

export const suite = (name: string, makeLayer: () => Layer.Layer<OAuthStore, unknown>): void => {
  describe(`${name} OAuthStore conformance`, () => {
    const test = (title: string, body: Effect.Effect<void, unknown, OAuthStore>) =>
      it.live(title, () => body.pipe(Effect.provide(makeLayer())))

    test(
      "keeps registered clients",
      Effect.gen(function* () {
        const store = yield* OAuthStore
        const client = {
          clientId: `mcpc_${randomUUID()}`,
          secretHash: hash(),
          tokenEndpointAuthMethod: "client_secret_basic" as const,
          redirectUris: ["https://app.example.com/cb", "http://127.0.0.1/cb"],
          clientName: "Example",
          metadata: { client_name: "Example", redirect_uris: ["https://app.example.com/cb", "http://127.0.0.1/cb"] },
          createdAt: T0,
          unusedExpiresAt: at(86400)
        }
        yield* store.insertClient(client)
        expect(yield* store.getClient(client.clientId)).toEqual(client)
        expect(yield* store.getClient("mcpc_unknown")).toBeUndefined()
      })
    )

    test(
      "a pending sign-in expires, counts refusals and is taken once",
      Effect.gen(function* () {
        const store = yield* OAuthStore
        const pending = pendingAt()
        yield* store.insertPending(pending)
        expect(yield* store.getPending(pending.id, at(10))).toEqual(pending)
        expect(yield* store.getPending(pending.id, at(600))).toBeUndefined()
        expect(yield* store.recordFailedAttempt(pending.id, at(10))).toBe(1)
        expect(yield* store.recordFailedAttempt(pending.id, at(11))).toBe(2)
        expect((yield* store.getPending(pending.id, at(12)))?.failedAttempts).toBe(2)
        expect(yield* store.recordFailedAttempt(pending.id, at(600))).toBeUndefined()

        const taken = yield* Effect.all(
          [1, 2, 3, 4].map(() => store.takePending(pending.id, at(20))),
          { concurrency: "unbounded" }
        )
        expect(taken.filter((row) => row !== undefined)).toHaveLength(1)
        expect(yield* store.getPending(pending.id, at(21))).toBeUndefined()

        const stale = pendingAt()
        yield* store.insertPending(stale)
        expect(yield* store.takePending(stale.id, at(601))).toBeUndefined()
      })
    )

    test(
      "a code redeems once, creating its grant and tokens",
      Effect.gen(function* () {
        const store = yield* OAuthStore
        const code = codeAt()
        yield* store.insertCode(code)
        expect(yield* store.getCode(code.hash)).toEqual(code)
        const attempts = yield* Effect.all(
          [1, 2, 3, 4].map(() => store.redeemCode(code.hash, at(5), tokensAt(at(5)))),
          { concurrency: "unbounded" }
        )
        const redeemed = attempts.filter((attempt) => attempt._tag === "Redeemed")
        expect(redeemed).toHaveLength(1)
        // The later redemptions saw a redeemed code, and revoked the grant.
        expect(attempts.filter((attempt) => attempt._tag === "AlreadyRedeemed")).toHaveLength(3)
        const grant = redeemed[0]!._tag === "Redeemed" ? redeemed[0]!.grant : undefined
        expect(grant).toMatchObject({
          id: code.grantId,
          clientId: code.clientId,
          accountId: code.accountId,
          apiKeyId: code.apiKeyId,
          scopes: code.scopes,
          resource: code.resource
        })
        expect((yield* store.getCode(code.hash))?.redeemedAt).toEqual(at(5))
      })
    )

    test(
      "redeeming a redeemed code revokes the grant it issued",
      Effect.gen(function* () {
        const store = yield* OAuthStore
        const { code, tokens } = yield* grantFixture
        const access = yield* store.findToken(tokens.accessHash)
        expect(access?.token).toMatchObject({ kind: "access", grantId: code.grantId, scopes: tokens.scopes, rotatedAt: null })
        expect(access?.token.expiresAt).toEqual(tokens.accessExpiresAt)
        expect(access?.grant.revokedAt).toBeNull()

        expect((yield* store.redeemCode(code.hash, at(30), tokensAt(at(30))))._tag).toBe("AlreadyRedeemed")
        expect((yield* store.findToken(tokens.accessHash))?.grant.revokedAt).toEqual(at(30))
        expect((yield* store.findToken(tokens.refreshHash))?.grant.revokedAt).toEqual(at(30))
      })
    )

    test(
      "an expired or unknown code issues nothing",
      Effect.gen(function* () {
        const store = yield* OAuthStore
        const code = codeAt()
        yield* store.insertCode(code)
        const tokens = tokensAt(at(300))
        expect((yield* store.redeemCode(code.hash, at(300), tokens))._tag).toBe("Invalid")
        expect((yield* store.redeemCode(hash(), at(1), tokensAt(at(1))))._tag).toBe("Invalid")
        expect(yield* store.findToken(tokens.accessHash)).toBeUndefined()
      })
    )

    test(
      "a refresh token rotates once; presenting it again revokes the grant",
      Effect.gen(function* () {
        const store = yield* OAuthStore
        const { tokens } = yield* grantFixture
        const nexts = [1, 2, 3].map(() => tokensAt(at(60)))
        const rotations = yield* Effect.all(
          nexts.map((next) => store.rotateRefresh(tokens.refreshHash, at(60), next)),
          { concurrency: "unbounded" }
        )
        expect(rotations.filter((rotation) => rotation._tag === "Rotated")).toHaveLength(1)
        expect(rotations.filter((rotation) => rotation._tag === "Reused")).toHaveLength(2)
        const winner = nexts[rotations.findIndex((rotation) => rotation._tag === "Rotated")]!
        const issued = yield* store.findToken(winner.refreshHash)
        expect(issued?.token).toMatchObject({ kind: "refresh", rotatedAt: null, scopes: winner.scopes })
        // The losers' reuse revoked the family, the new pair included.
        expect(issued?.grant.revokedAt).toEqual(at(60))
        expect((yield* store.findToken(tokens.refreshHash))?.token.rotatedAt).toEqual(at(60))
      })
    )

    test(
      "rotation issues a live pair in the same grant, and refuses what cannot rotate",
      Effect.gen(function* () {
        const store = yield* OAuthStore
        const { code, tokens } = yield* grantFixture
        const next = tokensAt(at(60))
        expect((yield* store.rotateRefresh(tokens.refreshHash, at(60), next))._tag).toBe("Rotated")
        const access = yield* store.findToken(next.accessHash)
        expect(access?.token).toMatchObject({ kind: "access", grantId: code.grantId })
        expect(access?.grant.revokedAt).toBeNull()

        // An access token is not a refresh token; an unknown one is nothing.
        expect((yield* store.rotateRefresh(next.accessHash, at(61), tokensAt(at(61))))._tag).toBe("Invalid")
        expect((yield* store.rotateRefresh(hash(), at(61), tokensAt(at(61))))._tag).toBe("Invalid")
        // Expired.
        expect((yield* store.rotateRefresh(next.refreshHash, next.refreshExpiresAt, tokensAt(next.refreshExpiresAt)))._tag).toBe(
          "Invalid"
        )
        // Of a revoked grant.
        expect(yield* store.revokeGrant(code.grantId, at(70))).toBe(true)
        expect(yield* store.revokeGrant(code.grantId, at(71))).toBe(false)
        expect((yield* store.rotateRefresh(next.refreshHash, at(72), tokensAt(at(72))))._tag).toBe("Invalid")
        expect((yield* store.findToken(next.accessHash))?.grant.revokedAt).toEqual(at(70))
        expect(yield* store.revokeGrant(randomUUID(), at(73))).toBe(false)
      })
    )

    test(
      "a sign-in code signs in once, until it expires",
      Effect.gen(function* () {
        const store = yield* OAuthStore
        const accountId = Ids.makeAccountId()
        const code = { hash: hash(), accountId, createdAt: T0, expiresAt: at(600) }
        yield* store.insertSignInCode(code)
        const uses = yield* Effect.all(
          [1, 2, 3].map(() => store.redeemSignInCode(code.hash, at(5))),
          { concurrency: "unbounded" }
        )
        expect(uses.filter((use) => use !== undefined)).toEqual([accountId])
        const late = { hash: hash(), accountId, createdAt: T0, expiresAt: at(600) }
        yield* store.insertSignInCode(late)
        expect(yield* store.redeemSignInCode(late.hash, at(600))).toBeUndefined()
        expect(yield* store.redeemSignInCode(hash(), at(1))).toBeUndefined()
      })
    )

    test(
      "purges what expired, and keeps what lives",
      Effect.gen(function* () {
        const store = yield* OAuthStore
        const pending = pendingAt()
        yield* store.insertPending(pending)
        const { tokens } = yield* grantFixture
        const later = at(3600 + 1)
        expect(yield* store.purgeExpired(later)).toBeGreaterThanOrEqual(3)
        expect(yield* store.getPending(pending.id, at(1))).toBeUndefined()
        expect(yield* store.findToken(tokens.accessHash)).toBeUndefined()
        // The refresh token lives thirty days, and with it its grant.
        expect((yield* store.findToken(tokens.refreshHash))?.grant.revokedAt).toBeNull()
        expect(yield* store.purgeExpired(tokens.refreshExpiresAt)).toBeGreaterThanOrEqual(2)
        expect(yield* store.findToken(tokens.refreshHash)).toBeUndefined()
      })
    )

    test(
      "a sign-in completed through a client keeps it; an unused one expires",
      Effect.gen(function* () {
        const store = yield* OAuthStore
        const used = clientAt()
        const unused = clientAt()
        const signingIn = clientAt()
        const legacy = clientAt({ unusedExpiresAt: null })
        yield* Effect.forEach([used, unused, signingIn, legacy], store.insertClient, { discard: true })
        const code = codeAt({ clientId: used.clientId, createdAt: at(600), expiresAt: at(900) })
        yield* store.insertCode(code)
        expect((yield* store.redeemCode(code.hash, at(601), tokensAt(at(601))))._tag).toBe("Redeemed")
        expect((yield* store.getClient(used.clientId))?.unusedExpiresAt).toBeNull()

        // A sign-in still in progress at expiry keeps its client until it ends.
        const pending = pendingAt({ clientId: signingIn.clientId, createdAt: at(86000), expiresAt: at(86600) })
        yield* store.insertPending(pending)
        yield* store.purgeExpired(at(86399))
        expect(yield* store.getClient(unused.clientId)).toEqual(unused)
        yield* store.purgeExpired(at(86400))
        expect(yield* store.getClient(unused.clientId)).toBeUndefined()
        expect(yield* store.getClient(signingIn.clientId)).toEqual(signingIn)
        expect(yield* store.getClient(used.clientId)).toBeDefined()
        expect(yield* store.getClient(legacy.clientId)).toEqual(legacy)
        yield* store.purgeExpired(at(86600))
        expect(yield* store.getClient(signingIn.clientId)).toBeUndefined()
        expect(yield* store.getClient(used.clientId)).toBeDefined()
      })
    )

    test(
      "admits registrations up to the per-source limit of a window",
      Effect.gen(function* () {
        const store = yield* OAuthStore
        const limits = { perSource: 3, total: 100 }
        const tags = []
        for (let i = 0; i < 5; i++) tags.push(yield* store.admitRegistration(windowOf("192.0.2.1", limits)))
        expect(tags).toEqual([
          { _tag: "Admitted" },
          { _tag: "Admitted" },
          { _tag: "Admitted" },
          { _tag: "Limited", by: "source" },
          { _tag: "Limited", by: "source" }
        ])
        expect(yield* store.admitRegistration(windowOf("2001:db8:1:2::/64", limits))).toEqual({ _tag: "Admitted" })
        const next = { ...windowOf("192.0.2.1", limits), start: at(3600), end: at(7200) }
        expect(yield* store.admitRegistration(next)).toEqual({ _tag: "Admitted" })
      })
    )

    test(
      "admits registrations up to the total limit of a window, counting only the admitted",
      Effect.gen(function* () {
        const store = yield* OAuthStore
        expect(yield* store.admitRegistration(windowOf("a", { perSource: 1, total: 2 }))).toEqual({ _tag: "Admitted" })
        expect(yield* store.admitRegistration(windowOf("b", { perSource: 1, total: 1 }))).toEqual({
          _tag: "Limited",
          by: "total"
        })
        // b's refusal was not counted against b.
        expect(yield* store.admitRegistration(windowOf("b", { perSource: 1, total: 2 }))).toEqual({ _tag: "Admitted" })
        expect(yield* store.admitRegistration(windowOf("c", { perSource: 1, total: 2 }))).toEqual({
          _tag: "Limited",
          by: "total"
        })
      })
    )

    test(
      "concurrent registrations never pass the limits",
      Effect.gen(function* () {
        const store = yield* OAuthStore
        const one = yield* Effect.all(
          Array.from({ length: 12 }, () => store.admitRegistration(windowOf("198.51.100.7", { perSource: 4, total: 100 }))),
          { concurrency: "unbounded" }
        )
        expect(one.filter((admission) => admission._tag === "Admitted")).toHaveLength(4)
        const many = yield* Effect.all(
          Array.from({ length: 12 }, (_, i) => store.admitRegistration(windowOf(`203.0.113.${i}`, { perSource: 4, total: 9 }))),
          { concurrency: "unbounded" }
        )
        // 4 of the 9 went to the first source.
        expect(many.filter((admission) => admission._tag === "Admitted")).toHaveLength(5)
      })
    )

    test(
      "purges the counts of ended windows",
      Effect.gen(function* () {
        const store = yield* OAuthStore
        yield* store.admitRegistration(windowOf("192.0.2.1", { perSource: 1, total: 1 }))
        expect(yield* store.purgeExpired(at(3599))).toBe(0)
        // The source's count and the total.
        expect(yield* store.purgeExpired(at(3600))).toBe(2)
      })
    )

    test(
      "counts requests per bucket and window up to the limit, concurrently too",
      Effect.gen(function* () {
        const store = yield* OAuthStore
        const window = (bucket: string, limit: number, start = T0) => ({
          bucket,
          start,
          end: new Date(start.getTime() + 60_000),
          limit
        })
        const results = yield* Effect.all(
          Array.from({ length: 10 }, () => store.admitRequest(window("authorize 192.0.2.1", 3))),
          { concurrency: "unbounded" }
        )
        expect(results.filter(Boolean)).toHaveLength(3)
        // Another bucket, and the next window, count apart; so do registrations of the same source.
        expect(yield* store.admitRequest(window("authorize 192.0.2.2", 3))).toBe(true)
        expect(yield* store.admitRequest(window("authorize 192.0.2.1", 3, at(60)))).toBe(true)
        expect(yield* store.admitRegistration(windowOf("192.0.2.1", { perSource: 1, total: 1 }))).toEqual({ _tag: "Admitted" })
        // Ended windows are purged: the two of T0 (the registration's hour lives on).
        expect(yield* store.purgeExpired(at(60))).toBe(2)
        expect(yield* store.admitRequest(window("authorize 192.0.2.1", 3))).toBe(true)
      })
    )

    test(
      "lists an account's live grants, newest first, and revokes one",
      Effect.gen(function* () {
        const store = yield* OAuthStore
        const accountId = Ids.makeAccountId()
        const client = clientAt({ clientName: "Desk app" })
        yield* store.insertClient(client)
        const redeem = (overrides: Partial<AuthorizationCode>, when: Date) =>
          Effect.gen(function* () {
            const code = codeAt({ accountId, createdAt: when, expiresAt: new Date(when.getTime() + 300_000), ...overrides })
            yield* store.insertCode(code)
            const tokens = tokensAt(when)
            expect((yield* store.redeemCode(code.hash, when, tokens))._tag).toBe("Redeemed")
            return { code, tokens }
          })
        const first = yield* redeem({ clientId: client.clientId }, T0)
        const second = yield* redeem({ clientId: "https://app.example.com/client.json" }, at(10))
        const revoked = yield* redeem({}, at(20))
        yield* redeem({ accountId: Ids.makeAccountId() }, at(30))
        expect(yield* store.revokeGrant(revoked.code.grantId, at(21))).toBe(true)
        // The first grant's refresh token rotates: its newest tokens date from the rotation.
        const next = tokensAt(at(100))
        expect((yield* store.rotateRefresh(first.tokens.refreshHash, at(100), next))._tag).toBe("Rotated")

        const listed = yield* store.listActiveGrants(accountId, at(200))
        expect(listed.map((active) => active.grant.id)).toEqual([second.code.grantId, first.code.grantId])
        expect(listed[0]).toMatchObject({
          clientName: null,
          lastIssuedAt: at(10),
          refreshExpiresAt: second.tokens.refreshExpiresAt
        })
        expect(listed[0]!.grant).toMatchObject({ clientId: "https://app.example.com/client.json", accountId, revokedAt: null })
        expect(listed[1]).toMatchObject({
          clientName: "Desk app",
          lastIssuedAt: at(100),
          refreshExpiresAt: next.refreshExpiresAt
        })

        expect((yield* store.getGrant(second.code.grantId))?.revokedAt).toBeNull()
        expect(yield* store.getGrant(randomUUID())).toBeUndefined()
        expect(yield* store.revokeGrant(second.code.grantId, at(300))).toBe(true)
        expect((yield* store.getGrant(second.code.grantId))?.revokedAt).toEqual(at(300))
        expect((yield* store.listActiveGrants(accountId, at(301))).map((active) => active.grant.id)).toEqual([first.code.grantId])
        // Past its refresh token's expiry a grant is no longer listed.
        expect(yield* store.listActiveGrants(accountId, next.refreshExpiresAt)).toEqual([])
      })
    )
  })
}
