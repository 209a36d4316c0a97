/**
 * The conformance suite every OAuthStore passes: each method, expiry against the given `now`,
 * and the concurrency promises of the port (one winner for a sign-in, a code, a rotation;
 * reuse revokes). Every case gets a fresh store from `makeLayer` and passes every `now`.
 *
 * @example
 * ```ts
 * OAuthStoreConformance.suite("memory", () => OAuthStore.layerMemory)
 * ```
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import type { Layer } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { Ids } from "@taskmeter/kernel"
import { OAuthStore } from "../OAuthStore.ts"
import type { AuthorizationCode, NewTokens, PendingAuthorization } from "../OAuthStore.ts"

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

/** A code redeemed at T0 and the tokens it issued. */
const grantFixture = Effect.gen(function*() {
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

    test("keeps registered clients", Effect.gen(function*() {
      const store = yield* OAuthStore
      const client = {
        clientId: `mcpc_${randomUUID()}`,
        secretHash: hash(),
        tokenEndpointAuthMethod: "client_secret_basic" as const,
        redirectUris: ["https://app.example.com/cb", "http://127.0.0.1/cb"],
        clientName: "Example",
        metadata: { client_name: "Example", redirect_uris: ["https://app.example.com/cb", "http://127.0.0.1/cb"] },
        createdAt: T0
      }
      yield* store.insertClient(client)
      expect(yield* store.getClient(client.clientId)).toEqual(client)
      expect(yield* store.getClient("mcpc_unknown")).toBeUndefined()
    }))

    test("a pending sign-in expires, counts refusals and is taken once", Effect.gen(function*() {
      const store = yield* OAuthStore
      const pending = pendingAt()
      yield* store.insertPending(pending)
      expect(yield* store.getPending(pending.id, at(10))).toEqual(pending)
      expect(yield* store.getPending(pending.id, at(600))).toBeUndefined()
      expect(yield* store.recordFailedAttempt(pending.id, at(10))).toBe(1)
      expect(yield* store.recordFailedAttempt(pending.id, at(11))).toBe(2)
      expect((yield* store.getPending(pending.id, at(12)))?.failedAttempts).toBe(2)
      expect(yield* store.recordFailedAttempt(pending.id, at(600))).toBeUndefined()

      const taken = yield* Effect.all([1, 2, 3, 4].map(() => store.takePending(pending.id, at(20))), { concurrency: "unbounded" })
      expect(taken.filter((row) => row !== undefined)).toHaveLength(1)
      expect(yield* store.getPending(pending.id, at(21))).toBeUndefined()

      const stale = pendingAt()
      yield* store.insertPending(stale)
      expect(yield* store.takePending(stale.id, at(601))).toBeUndefined()
    }))

    test("a code redeems once, creating its grant and tokens", Effect.gen(function*() {
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
    }))

    test("redeeming a redeemed code revokes the grant it issued", Effect.gen(function*() {
      const store = yield* OAuthStore
      const { code, tokens } = yield* grantFixture
      const access = yield* store.findToken(tokens.accessHash)
      expect(access?.token).toMatchObject({ kind: "access", grantId: code.grantId, scopes: tokens.scopes, rotatedAt: null })
      expect(access?.token.expiresAt).toEqual(tokens.accessExpiresAt)
      expect(access?.grant.revokedAt).toBeNull()

      expect((yield* store.redeemCode(code.hash, at(30), tokensAt(at(30))))._tag).toBe("AlreadyRedeemed")
      expect((yield* store.findToken(tokens.accessHash))?.grant.revokedAt).toEqual(at(30))
      expect((yield* store.findToken(tokens.refreshHash))?.grant.revokedAt).toEqual(at(30))
    }))

    test("an expired or unknown code issues nothing", Effect.gen(function*() {
      const store = yield* OAuthStore
      const code = codeAt()
      yield* store.insertCode(code)
      const tokens = tokensAt(at(300))
      expect((yield* store.redeemCode(code.hash, at(300), tokens))._tag).toBe("Invalid")
      expect((yield* store.redeemCode(hash(), at(1), tokensAt(at(1))))._tag).toBe("Invalid")
      expect(yield* store.findToken(tokens.accessHash)).toBeUndefined()
    }))

    test("a refresh token rotates once; presenting it again revokes the grant", Effect.gen(function*() {
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
    }))

    test("rotation issues a live pair in the same grant, and refuses what cannot rotate", Effect.gen(function*() {
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
      expect((yield* store.rotateRefresh(next.refreshHash, next.refreshExpiresAt, tokensAt(next.refreshExpiresAt)))._tag)
        .toBe("Invalid")
      // Of a revoked grant.
      expect(yield* store.revokeGrant(code.grantId, at(70))).toBe(true)
      expect(yield* store.revokeGrant(code.grantId, at(71))).toBe(false)
      expect((yield* store.rotateRefresh(next.refreshHash, at(72), tokensAt(at(72))))._tag).toBe("Invalid")
      expect((yield* store.findToken(next.accessHash))?.grant.revokedAt).toEqual(at(70))
      expect(yield* store.revokeGrant(randomUUID(), at(73))).toBe(false)
    }))

    test("a sign-in code signs in once, until it expires", Effect.gen(function*() {
      const store = yield* OAuthStore
      const accountId = Ids.makeAccountId()
      const code = { hash: hash(), accountId, createdAt: T0, expiresAt: at(600) }
      yield* store.insertSignInCode(code)
      const uses = yield* Effect.all([1, 2, 3].map(() => store.redeemSignInCode(code.hash, at(5))), { concurrency: "unbounded" })
      expect(uses.filter((use) => use !== undefined)).toEqual([accountId])
      const late = { hash: hash(), accountId, createdAt: T0, expiresAt: at(600) }
      yield* store.insertSignInCode(late)
      expect(yield* store.redeemSignInCode(late.hash, at(600))).toBeUndefined()
      expect(yield* store.redeemSignInCode(hash(), at(1))).toBeUndefined()
    }))

    test("purges what expired, and keeps what lives", Effect.gen(function*() {
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
    }))
  })
}
