/**
 * A grant's total lifetime, on the TestClock: tokens never outlive it, refreshes within it
 * rotate as usual, and the first refresh past it is invalid_grant and ends the grant. The
 * /authorize windows of AuthorizeLimit.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { Accounts, Money } from "@taskmeter/kernel"
import { MemoryStore } from "@taskmeter/storage-memory"
import { AuthorizationServer, AuthorizeLimit, OAuthStore } from "../src/index.ts"
import { sha256Hex } from "../src/internal/Secrets.ts"
import { pkce, REDIRECT_URI } from "./support/RawOAuth.ts"

const BASE = "https://api.example.com"
const DAY = 86_400

const layer = (options: Partial<AuthorizationServer.Options>) =>
  AuthorizationServer.layer({ baseUrl: BASE, ...options }).pipe(
    Layer.provideMerge(OAuthStore.layerMemory),
    Layer.provideMerge(Accounts.layer()),
    Layer.provide(MemoryStore.layer)
  )

/** Registers a client, signs in with a new account's key, and redeems the code: the first tokens. */
const signIn = Effect.gen(function* () {
  const server = yield* AuthorizationServer.AuthorizationServer
  const accounts = yield* Accounts.Accounts
  const { account } = yield* accounts.create({ name: "acme", credits: Money.micros(1_000_000) })
  const key = yield* accounts.createKey(account.id, {})
  const client = yield* server.register({ redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: "none" }, "127.0.0.1")
  const clientId = client["client_id"] as string
  const { verifier, challenge } = pkce()
  const opened = yield* server.authorize(
    new URLSearchParams({
      response_type: "code",
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      code_challenge: challenge,
      code_challenge_method: "S256"
    })
  )
  if (opened._tag !== "SignIn") return yield* Effect.die(new Error(`no sign-in page: ${JSON.stringify(opened)}`))
  const decided = yield* server.decide({
    pendingId: opened.view.pendingId,
    csrfToken: opened.view.csrfToken,
    cookieToken: opened.view.csrfToken,
    credential: key.secret,
    approve: true
  })
  if (decided._tag !== "Redirect") return yield* Effect.die(new Error(`no redirect: ${JSON.stringify(decided)}`))
  const code = new URL(decided.location).searchParams.get("code")!
  const tokens = yield* server.token(
    new URLSearchParams({ grant_type: "authorization_code", code, code_verifier: verifier, client_id: clientId }),
    undefined
  )
  return { clientId, tokens, accountId: account.id }
})

const refresh = (clientId: string, refreshToken: string) =>
  AuthorizationServer.AuthorizationServer.use((server) =>
    server.token(
      new URLSearchParams({ grant_type: "refresh_token", refresh_token: refreshToken, client_id: clientId }),
      undefined
    )
  )

describe("a grant's total lifetime", () => {
  it.effect("caps every token, and refuses the first refresh past it as invalid_grant", () =>
    Effect.gen(function* () {
      const { clientId, tokens } = yield* signIn
      expect(tokens.expires_in).toBe(3600)
      // Refreshed within the lifetime (refresh tokens last 30 days, the grant 40): rotates as usual.
      yield* TestClock.adjust(`${29 * DAY} seconds`)
      const second = yield* refresh(clientId, tokens.refresh_token)
      // The next refresh token would last to day 59; it ends with the grant, on day 40.
      const store = yield* OAuthStore.OAuthStore
      const found = yield* store.findToken(sha256Hex(second.refresh_token))
      expect(found?.token.expiresAt.getTime()).toBe(found!.grant.createdAt.getTime() + 40 * DAY * 1000)

      // An hour before the end, the access token lasts the hour that is left, not more.
      yield* TestClock.adjust(`${11 * DAY - 1800} seconds`)
      const last = yield* refresh(clientId, second.refresh_token)
      expect(last.expires_in).toBe(1800)

      yield* TestClock.adjust("1800 seconds")
      const refused = yield* Effect.flip(refresh(clientId, last.refresh_token))
      expect(refused.error).toBe("invalid_grant")
      expect(refused.description).toContain("maximum lifetime of 40 days")
      expect((yield* store.findToken(sha256Hex(last.refresh_token)))?.grant.revokedAt).not.toBeNull()
    }).pipe(Effect.provide(layer({ grantLifetimeSeconds: 40 * DAY })))
  )

  it.effect("is 90 days by default, past which a rotated family is refused too", () =>
    Effect.gen(function* () {
      const server = yield* AuthorizationServer.AuthorizationServer
      expect(server.settings.grantLifetimeSeconds).toBe(90 * DAY)
      let { clientId, tokens } = yield* signIn
      for (let day = 29; day < 90; day += 29) {
        yield* TestClock.adjust(`${29 * DAY} seconds`)
        tokens = yield* refresh(clientId, tokens.refresh_token)
      }
      // Day 87: the last refresh token ends with the grant on day 90.
      yield* TestClock.adjust(`${3 * DAY} seconds`)
      expect((yield* Effect.flip(refresh(clientId, tokens.refresh_token))).error).toBe("invalid_grant")
      const verified = yield* Effect.flip(server.verify(tokens.access_token))
      expect(verified._tag).toBe("AuthRequired")
    }).pipe(Effect.provide(layer({})))
  )
})

describe("the /authorize limit", () => {
  it.effect("counts per client address in fixed windows, and says when to retry", () =>
    Effect.gen(function* () {
      const server = yield* AuthorizationServer.AuthorizationServer
      yield* TestClock.adjust("45 seconds")
      for (let i = 0; i < 2; i++) expect(yield* server.admitAuthorize("203.0.113.9")).toBeUndefined()
      const refused = yield* server.admitAuthorize("203.0.113.9")
      expect(refused).toMatchObject({ _tag: "Problem", status: 429, retryAfterSeconds: 15 })
      // Another address, and an IPv6 address of another /64, are counted apart.
      expect(yield* server.admitAuthorize("203.0.113.10")).toBeUndefined()
      expect(yield* server.admitAuthorize("2001:db8::1")).toBeUndefined()
      expect(yield* server.admitAuthorize("2001:db8::2")).toBeUndefined()
      expect(yield* server.admitAuthorize("2001:db8::3")).toMatchObject({ status: 429 })
      expect(yield* server.admitAuthorize("2001:db8:0:1::3")).toBeUndefined()
      yield* TestClock.adjust("15 seconds")
      expect(yield* server.admitAuthorize("203.0.113.9")).toBeUndefined()
    }).pipe(Effect.provide(layer({ authorizeLimit: { perSource: 2 } })))
  )

  it("has defaults and refuses limits that are not positive integers", () => {
    expect(AuthorizeLimit.resolve(undefined)).toEqual({ windowSeconds: 60, perSource: 30 })
    expect(() => AuthorizeLimit.resolve({ perSource: 0 })).toThrow("authorizeLimit.perSource")
    expect(AuthorizeLimit.windowAt(new Date(90_000), "::ffff:192.0.2.1", AuthorizeLimit.defaults)).toEqual({
      bucket: "authorize 192.0.2.1",
      start: new Date(60_000),
      end: new Date(120_000),
      limit: 30
    })
  })
})
