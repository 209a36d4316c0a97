/**
 * The authorization server and the resource server over plain HTTP, rule by rule: discovery
 * documents, registration, the checks of an authorization request, the sign-in page's
 * protections, PKCE and the code's single use, refresh rotation and reuse, revocation, and the
 * tokens /mcp refuses (none, unknown, expired, revoked, another audience, a revoked key's).
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Accounts } from "@taskmeter/kernel"
import { OAuthStore, SignInCodes } from "../src/index.ts"
import { newSecret, PREFIX, sha256Hex } from "../src/internal/Secrets.ts"
import * as RawOAuth from "./support/RawOAuth.ts"
import { REDIRECT_URI } from "./support/RawOAuth.ts"
import * as TestServer from "./support/TestServer.ts"

let server: TestServer.TestServer
let base: string

beforeAll(async () => {
  server = await TestServer.make({ maxSignInAttempts: 3 })
  base = server.baseUrl
})

afterAll(async () => {
  await server?.close()
})

const publicClient = async () => (await RawOAuth.register(base)).body.client_id as string

const authorizeParams = (clientId: string, overrides: Record<string, string | undefined> = {}) => ({
  response_type: "code",
  client_id: clientId,
  redirect_uri: REDIRECT_URI,
  code_challenge: RawOAuth.pkce().challenge,
  code_challenge_method: "S256",
  state: "state-1",
  ...overrides
})

describe("discovery", () => {
  it("serves the protected resource metadata at the path-specific and the root URL, with CORS", async () => {
    for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
      const response = await fetch(`${base}${path}`, { headers: { origin: "https://inspector.example" } })
      expect(response.status).toBe(200)
      expect(response.headers.get("access-control-allow-origin")).toBe("*")
      expect(await response.json()).toEqual({
        resource: `${base}/mcp`,
        authorization_servers: [base],
        scopes_supported: ["jobs:create", "jobs:read", "usage:read"],
        bearer_methods_supported: ["header"],
        resource_name: "taskmeter MCP"
      })
      const preflight = await fetch(`${base}${path}`, { method: "OPTIONS", headers: { origin: "https://inspector.example" } })
      expect(preflight.status).toBe(204)
      expect(preflight.headers.get("access-control-allow-origin")).toBe("*")
    }
  })

  it("serves RFC 8414 metadata with the endpoints at the root paths", async () => {
    const response = await fetch(`${base}/.well-known/oauth-authorization-server`)
    expect(response.headers.get("access-control-allow-origin")).toBe("*")
    expect(await response.json()).toMatchObject({
      issuer: base,
      authorization_endpoint: `${base}/authorize`,
      token_endpoint: `${base}/token`,
      registration_endpoint: `${base}/register`,
      revocation_endpoint: `${base}/revoke`,
      response_types_supported: ["code"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      code_challenge_methods_supported: ["S256"],
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true
    })
  })

  it("answers /mcp without a token with 401 and a challenge naming the metadata", async () => {
    const bare = await RawOAuth.mcpCall(base, undefined)
    expect(bare.status).toBe(401)
    expect(bare.headers.get("www-authenticate")).toBe(
      `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp", scope="jobs:create jobs:read usage:read"`
    )
    expect(bare.headers.get("access-control-expose-headers")).toContain("www-authenticate")
    expect(JSON.parse(bare.text).code).toBe("AUTH_REQUIRED")
    const unknown = await RawOAuth.mcpCall(base, newSecret(PREFIX.accessToken))
    expect(unknown.status).toBe(401)
    expect(unknown.headers.get("www-authenticate")).toContain('error="invalid_token"')
  })
})

describe("registration", () => {
  it("registers a public client and a confidential one, which must then authenticate", async () => {
    const open = await RawOAuth.register(base, { client_name: "Open" })
    expect(open.status).toBe(201)
    expect(open.body).toMatchObject({ client_name: "Open", redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: "none" })
    expect(open.body.client_secret).toBeUndefined()

    const closed = await RawOAuth.register(base, { token_endpoint_auth_method: "client_secret_basic" })
    expect(closed.status).toBe(201)
    expect(closed.body.client_secret).toMatch(/^tmcs_/)
    const refused = await RawOAuth.token(base, {
      grant_type: "authorization_code",
      code: "x",
      code_verifier: "y",
      client_id: closed.body.client_id
    })
    expect(refused.status).toBe(401)
    expect(refused.body.error).toBe("invalid_client")
    const basic = Buffer.from(`${closed.body.client_id}:${closed.body.client_secret}`).toString("base64")
    const authenticated = await RawOAuth.token(
      base,
      { grant_type: "authorization_code", code: "x", code_verifier: "y" },
      { authorization: `Basic ${basic}` }
    )
    expect(authenticated.body.error).toBe("invalid_grant")
  })

  it("refuses redirect URIs that are not https, loopback or an app scheme, and unsupported grants", async () => {
    for (const uri of ["http://app.example.com/cb", "https://app.example.com/cb#frag", "javascript:alert(1)", "not a uri"]) {
      const response = await RawOAuth.register(base, { redirect_uris: [uri] })
      expect(response.status).toBe(400)
      expect(response.body.error).toBe("invalid_redirect_uri")
    }
    expect((await RawOAuth.register(base, { redirect_uris: ["cursor://anysphere.cursor-mcp/oauth/callback"] })).status).toBe(201)
    expect((await RawOAuth.register(base, { redirect_uris: ["http://[::1]:3000/cb"] })).status).toBe(201)
    const implicit = await RawOAuth.register(base, { grant_types: ["implicit"] })
    expect(implicit.body.error).toBe("invalid_client_metadata")
    const empty = await RawOAuth.register(base, { redirect_uris: [] })
    expect(empty.body.error).toBe("invalid_client_metadata")
  })

  it("takes client metadata only as application/json (RFC 7591 §3.1), saying so", async () => {
    const metadata = JSON.stringify({ client_name: "Plain", redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: "none" })
    for (const headers of [{ "content-type": "text/plain" }, {}] as const) {
      const response = await fetch(`${base}/register`, { method: "POST", headers, body: metadata })
      expect(response.status).toBe(400)
      const body = (await response.json()) as any
      expect(body.error).toBe("invalid_client_metadata")
      expect(body.error_description).toContain("Content-Type: application/json")
    }
  })
})

describe("registration limits", () => {
  it("refuses registrations past the per-source limit with 429, Retry-After and too_many_requests", async () => {
    const limited = await TestServer.make({ registrationLimit: { perSource: 2 } })
    try {
      expect((await RawOAuth.register(limited.baseUrl)).status).toBe(201)
      expect((await RawOAuth.register(limited.baseUrl)).status).toBe(201)
      const response = await fetch(`${limited.baseUrl}/register`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: "https://inspector.example" },
        body: JSON.stringify({ redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: "none" })
      })
      expect(response.status).toBe(429)
      const retryAfter = Number(response.headers.get("retry-after"))
      expect(retryAfter).toBeGreaterThanOrEqual(1)
      expect(retryAfter).toBeLessThanOrEqual(3600)
      expect(response.headers.get("access-control-allow-origin")).toBe("*")
      expect(response.headers.get("access-control-expose-headers")).toBe("retry-after")
      expect(await response.json()).toEqual({
        error: "too_many_requests",
        error_description: `Too many client registrations from this network; try again in ${retryAfter} seconds.`
      })
      // Invalid metadata is described, not counted.
      expect((await RawOAuth.register(limited.baseUrl, { redirect_uris: [] })).body.error).toBe("invalid_client_metadata")
    } finally {
      await limited.close()
    }
  })

  it("deletes a registration no sign-in completed through, and keeps one that signed in", async () => {
    const short = await TestServer.make({ unusedClientTtlSeconds: 1, purgeEvery: "200 millis" })
    try {
      const who = await short.customer()
      const unused = (await RawOAuth.register(short.baseUrl)).body.client_id
      const used = (await RawOAuth.register(short.baseUrl)).body.client_id
      await RawOAuth.signIn(short.baseUrl, { clientId: used, credential: who.secret })
      await new Promise((resolve) => setTimeout(resolve, 1_500))
      const gone = await RawOAuth.authorize(short.baseUrl, authorizeParams(unused))
      expect(gone.status).toBe(400)
      expect(gone.html).toContain("not registered")
      expect((await RawOAuth.authorize(short.baseUrl, authorizeParams(used))).status).toBe(200)
    } finally {
      await short.close()
    }
  })
})

describe("the /authorize limit", () => {
  it("answers past the per-address limit with a 429 page and Retry-After, for the page and the form alike", async () => {
    const limited = await TestServer.make({ authorizeLimit: { perSource: 2, windowSeconds: 3600 } })
    try {
      const clientId = (await RawOAuth.register(limited.baseUrl)).body.client_id
      const page = await RawOAuth.authorize(limited.baseUrl, authorizeParams(clientId))
      expect(page.status).toBe(200)
      expect((await RawOAuth.decide(limited.baseUrl, page, "tm_wrong")).status).toBe(401)
      for (const refused of [
        await RawOAuth.authorize(limited.baseUrl, authorizeParams(clientId)),
        await RawOAuth.decide(limited.baseUrl, page, "tm_wrong")
      ]) {
        expect(refused.status).toBe(429)
        expect(refused.html).toContain("Too many sign-in requests")
      }
      const again = await RawOAuth.authorize(limited.baseUrl, authorizeParams(clientId))
      const retryAfter = Number(again.headers.get("retry-after"))
      expect(retryAfter).toBeGreaterThanOrEqual(1)
      expect(retryAfter).toBeLessThanOrEqual(3600)
      // Other endpoints are not counted against it.
      expect((await RawOAuth.register(limited.baseUrl)).status).toBe(201)
    } finally {
      await limited.close()
    }
  })
})

describe("authorization requests", () => {
  it("shows an error page, never a redirect, for an unknown client or an unregistered redirect URI", async () => {
    const clientId = await publicClient()
    for (const params of [
      authorizeParams("mcpc_unknown"),
      authorizeParams(clientId, { redirect_uri: "http://127.0.0.1:8976/elsewhere" }),
      authorizeParams(clientId, { redirect_uri: "https://attacker.example/cb" })
    ]) {
      const page = await RawOAuth.authorize(base, params)
      expect(page.status).toBe(400)
      expect(page.location).toBeNull()
      expect(page.headers.get("x-frame-options")).toBe("DENY")
    }
  })

  it("accepts a loopback redirect URI on any port", async () => {
    const clientId = await publicClient()
    const page = await RawOAuth.authorize(base, authorizeParams(clientId, { redirect_uri: "http://127.0.0.1:41000/callback" }))
    expect(page.status).toBe(200)
  })

  it("sends protocol errors back to the client with state and iss", async () => {
    const clientId = await publicClient()
    const cases: Array<[Record<string, string | undefined>, string]> = [
      [{ code_challenge: undefined }, "invalid_request"],
      [{ code_challenge_method: "plain" }, "invalid_request"],
      [{ response_type: "token" }, "unsupported_response_type"],
      [{ resource: "https://elsewhere.example/mcp" }, "invalid_target"]
    ]
    for (const [overrides, error] of cases) {
      const page = await RawOAuth.authorize(base, authorizeParams(clientId, overrides))
      expect(page.status).toBe(303)
      const location = new URL(page.location!)
      expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI)
      expect(location.searchParams.get("error")).toBe(error)
      expect(location.searchParams.get("state")).toBe("state-1")
      expect(location.searchParams.get("iss")).toBe(base)
    }
  })

  it("refuses a parameter sent twice, one that is not percent-encoded UTF-8, and a state over 2048 characters: invalid_request, the bad state not sent back", async () => {
    const clientId = await publicClient()
    const { state: _state, ...params } = authorizeParams(clientId)
    const query = (extra: string) => `${new URLSearchParams(params)}&${extra}`
    const redirected = async (extra: string) => {
      const response = await fetch(`${base}/authorize?${query(extra)}`, { redirect: "manual" })
      expect(response.status, extra.slice(0, 40)).toBe(303)
      return new URL(response.headers.get("location")!)
    }
    for (const extra of [
      "state=a&state=b",
      "state=%ED%A0%80",
      "state=%E0%A4%A",
      `state=${"s".repeat(2049)}`,
      "state=ok&scope=jobs%3Aread&scope=usage%3Aread"
    ]) {
      const location = await redirected(extra)
      expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI)
      expect(location.searchParams.get("error")).toBe("invalid_request")
      expect(location.searchParams.get("error_description")).toMatch(/more than once|percent-encoded UTF-8|at most 2048/)
      expect(location.searchParams.get("state")).toBe(extra.startsWith("state=ok") ? "ok" : null)
    }
    // Without a trusted redirect URI, no redirect: a page.
    const twice = await fetch(`${base}/authorize?${query(`state=x&redirect_uri=${encodeURIComponent(REDIRECT_URI)}`)}`, {
      redirect: "manual"
    })
    expect(twice.status).toBe(400)
    expect(await twice.text()).toContain("redirect_uri is sent more than once")
    // A state of 2048 characters and a repeated resource (RFC 8707) are fine.
    const fine = await fetch(
      `${base}/authorize?${query(`state=${"s".repeat(2048)}&resource=${encodeURIComponent(`${base}/mcp`)}&resource=${encodeURIComponent(`${base}/mcp`)}`)}`,
      { redirect: "manual" }
    )
    expect(fine.status).toBe(200)
  })

  it("renders a framing-proof, uncached sign-in page naming the client, the redirect host and the scopes", async () => {
    const clientId = (await RawOAuth.register(base, { client_name: "Acme <Desktop>" })).body.client_id
    const page = await RawOAuth.authorize(base, authorizeParams(clientId, { scope: "jobs:read openid" }))
    expect(page.status).toBe(200)
    expect(page.headers.get("x-frame-options")).toBe("DENY")
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
    expect(page.headers.get("content-security-policy")).toContain("form-action 'self' http://127.0.0.1:8976")
    expect(page.headers.get("cache-control")).toBe("no-store")
    expect(page.headers.get("set-cookie")).toMatch(/HttpOnly/)
    expect(page.headers.get("set-cookie")).toMatch(/SameSite=Strict/)
    expect(page.html).toContain("Acme &#60;Desktop&#62; wants to use your taskmeter account")
    expect(page.html).toContain("127.0.0.1:8976")
    expect(page.html).toContain("See your tasks and their results")
    // Only the scope asked for (openid is unknown here and dropped).
    expect(page.html).not.toContain("Start tasks that spend your credits")
    expect(page.html).not.toContain("<script")
  })
})

describe("the sign-in form", () => {
  const open = async () => {
    const clientId = await publicClient()
    return { clientId, page: await RawOAuth.authorize(base, authorizeParams(clientId)) }
  }

  it("refuses a post without the page's CSRF cookie or token", async () => {
    const who = await server.customer()
    const { page } = await open()
    const noCookie = await RawOAuth.decide(base, page, who.secret, { cookie: null })
    expect(noCookie.status).toBe(403)
    expect(noCookie.location).toBeUndefined()
    const forged = await RawOAuth.decide(base, page, who.secret, {
      csrf: newSecret(""),
      cookie: `${page.cookie!.split("=")[0]}=forged`
    })
    expect(forged.status).toBe(403)
    // The genuine form still works.
    const genuine = await RawOAuth.decide(base, page, who.secret)
    expect(genuine.status).toBe(303)
    expect(genuine.location?.searchParams.get("code")).toMatch(/^tmac_/)
    expect(genuine.location?.searchParams.get("iss")).toBe(base)
    // Answered once: the same form again finds nothing.
    expect((await RawOAuth.decide(base, page, who.secret)).status).toBe(400)
  })

  it("asks again after a wrong key, and ends the sign-in after repeated refusals", async () => {
    const { page } = await open()
    const first = await RawOAuth.decide(base, page, "tm_wrong")
    expect(first.status).toBe(401)
    expect(first.html).toContain("That API key was not accepted.")
    expect((await RawOAuth.decide(base, page, "tm_wrong")).status).toBe(401)
    expect((await RawOAuth.decide(base, page, "tm_wrong")).status).toBe(429)
    const who = await server.customer()
    expect((await RawOAuth.decide(base, page, who.secret)).status).toBe(400)
  })

  it("grants no more than the key holds", async () => {
    const reader = await server.customer(1_000_000, { scopes: ["jobs:read", "usage:read"] })
    const { tokens } = await RawOAuth.signIn(base, { clientId: await publicClient(), credential: reader.secret })
    expect(tokens.scope).toBe("jobs:read usage:read")
    const chatOnly = await server.customer(1_000_000, { scopes: ["chat:create"] })
    const { page } = await open()
    const refused = await RawOAuth.decide(base, page, chatOnly.secret)
    expect(refused.status).toBe(401)
    expect(refused.html).toContain("cannot grant any of the permissions")
  })

  it("signs in with a one-time sign-in code", async () => {
    const who = await server.customer()
    const { code } = await server.runtime.runPromise(SignInCodes.create(who.accountId))
    const clientId = await publicClient()
    const { tokens } = await RawOAuth.signIn(base, { clientId, credential: code })
    expect(tokens.scope).toBe("jobs:create jobs:read usage:read")
    expect((await RawOAuth.mcpCall(base, tokens.access_token)).status).toBe(200)
    await expect(RawOAuth.signIn(base, { clientId, credential: code })).rejects.toThrow(/no code/)
  })
})

describe("tokens", () => {
  const codeFor = async (credential: string) => {
    const clientId = await publicClient()
    const { verifier, challenge } = RawOAuth.pkce()
    const page = await RawOAuth.authorize(base, authorizeParams(clientId, { code_challenge: challenge }))
    const answer = await RawOAuth.decide(base, page, credential)
    return { clientId, verifier, code: answer.location!.searchParams.get("code")! }
  }

  const exchange = (grant: { clientId: string; verifier: string; code: string }, overrides: Record<string, string> = {}) =>
    RawOAuth.token(base, {
      grant_type: "authorization_code",
      code: grant.code,
      code_verifier: grant.verifier,
      redirect_uri: REDIRECT_URI,
      client_id: grant.clientId,
      ...overrides
    })

  it("checks PKCE, the redirect URI, the client and the resource before redeeming a code", async () => {
    const who = await server.customer()
    const grant = await codeFor(who.secret)
    expect((await exchange(grant, { code_verifier: RawOAuth.pkce().verifier })).body.error).toBe("invalid_grant")
    expect((await exchange(grant, { redirect_uri: "http://127.0.0.1:8976/other" })).body.error).toBe("invalid_grant")
    expect((await exchange(grant, { client_id: await publicClient() })).body.error).toBe("invalid_grant")
    expect((await exchange(grant, { resource: "https://elsewhere.example/mcp" })).body.error).toBe("invalid_target")
    expect((await exchange(grant, { grant_type: "password" })).body.error).toBe("unsupported_grant_type")
    const issued = await exchange(grant, { resource: `${base}/mcp` })
    expect(issued.status).toBe(200)
    expect(issued.headers.get("cache-control")).toBe("no-store")
    expect(issued.body).toMatchObject({ token_type: "Bearer", expires_in: 3600, scope: "jobs:create jobs:read usage:read" })
    expect(issued.body.access_token).toMatch(/^tmat_/)
    expect(issued.body.refresh_token).toMatch(/^tmrt_/)
  })

  it("redeems a code once; a second redemption revokes the tokens of the first", async () => {
    const who = await server.customer()
    const grant = await codeFor(who.secret)
    const first = await exchange(grant)
    expect((await RawOAuth.mcpCall(base, first.body.access_token)).status).toBe(200)
    const second = await exchange(grant)
    expect(second.status).toBe(400)
    expect(second.body.error).toBe("invalid_grant")
    expect((await RawOAuth.mcpCall(base, first.body.access_token)).status).toBe(401)
  })

  it("rotates refresh tokens, may narrow scopes, never widens them", async () => {
    const who = await server.customer()
    const clientId = await publicClient()
    const { tokens } = await RawOAuth.signIn(base, { clientId, credential: who.secret, scope: "jobs:read usage:read" })
    const narrowed = await RawOAuth.token(base, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: clientId,
      scope: "jobs:read"
    })
    expect(narrowed.status).toBe(200)
    expect(narrowed.body.scope).toBe("jobs:read")
    expect(narrowed.body.refresh_token).not.toBe(tokens.refresh_token)
    const widened = await RawOAuth.token(base, {
      grant_type: "refresh_token",
      refresh_token: narrowed.body.refresh_token,
      client_id: clientId,
      scope: "jobs:create"
    })
    expect(widened.body.error).toBe("invalid_scope")
    const otherClient = await RawOAuth.token(base, {
      grant_type: "refresh_token",
      refresh_token: narrowed.body.refresh_token,
      client_id: await publicClient()
    })
    expect(otherClient.body.error).toBe("invalid_grant")
    const next = await RawOAuth.token(base, {
      grant_type: "refresh_token",
      refresh_token: narrowed.body.refresh_token,
      client_id: clientId
    })
    expect(next.status).toBe(200)
    expect(next.body.scope).toBe("jobs:read")
    expect((await RawOAuth.mcpCall(base, next.body.access_token)).status).toBe(200)
  })
})

describe("tokens /mcp refuses", () => {
  it("an expired access token gets 401", async () => {
    const shortLived = await TestServer.make({ accessTokenTtlSeconds: 1 })
    try {
      const who = await shortLived.customer()
      const clientId = (await RawOAuth.register(shortLived.baseUrl)).body.client_id
      const { tokens } = await RawOAuth.signIn(shortLived.baseUrl, { clientId, credential: who.secret })
      expect((await RawOAuth.mcpCall(shortLived.baseUrl, tokens.access_token)).status).toBe(200)
      await new Promise((resolve) => setTimeout(resolve, 1_100))
      const expired = await RawOAuth.mcpCall(shortLived.baseUrl, tokens.access_token)
      expect(expired.status).toBe(401)
      expect(expired.headers.get("www-authenticate")).toContain('error="invalid_token"')
      expect(JSON.parse(expired.text)).toEqual({ code: "AUTH_REQUIRED", error: "The access token has expired." })
      // The refresh token still works.
      const refreshed = await RawOAuth.token(shortLived.baseUrl, {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token,
        client_id: clientId
      })
      expect((await RawOAuth.mcpCall(shortLived.baseUrl, refreshed.body.access_token)).status).toBe(200)
    } finally {
      await shortLived.close()
    }
  })

  it("a revoked token gets 401, and revocation ends the refresh token too", async () => {
    const who = await server.customer()
    const clientId = await publicClient()
    const { tokens } = await RawOAuth.signIn(base, { clientId, credential: who.secret })
    // Another client cannot revoke it (and learns nothing: 200 all the same).
    expect((await RawOAuth.revoke(base, { token: tokens.access_token, client_id: await publicClient() })).status).toBe(200)
    expect((await RawOAuth.mcpCall(base, tokens.access_token)).status).toBe(200)
    expect((await RawOAuth.revoke(base, { token: tokens.access_token, client_id: clientId })).status).toBe(200)
    expect((await RawOAuth.mcpCall(base, tokens.access_token)).status).toBe(401)
    const refresh = await RawOAuth.token(base, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: clientId
    })
    expect(refresh.body.error).toBe("invalid_grant")
    expect((await RawOAuth.revoke(base, { token: "tmat_unknown", client_id: clientId })).status).toBe(200)
  })

  it("a token issued for another resource gets 401", async () => {
    const who = await server.customer()
    const access = newSecret(PREFIX.accessToken)
    await server.runtime.runPromise(
      Effect.gen(function* () {
        const store = yield* OAuthStore.OAuthStore
        const now = new Date()
        const hash = sha256Hex(newSecret(PREFIX.authorizationCode))
        yield* store.insertCode({
          hash,
          grantId: randomUUID(),
          clientId: "mcpc_elsewhere",
          redirectUri: REDIRECT_URI,
          codeChallenge: RawOAuth.pkce().challenge,
          accountId: who.accountId,
          apiKeyId: who.keyId,
          scopes: ["jobs:read"],
          resource: "https://elsewhere.example/mcp",
          createdAt: now,
          expiresAt: new Date(now.getTime() + 60_000),
          redeemedAt: null
        })
        yield* store.redeemCode(hash, now, {
          accessHash: sha256Hex(access),
          accessExpiresAt: new Date(now.getTime() + 3_600_000),
          refreshHash: sha256Hex(newSecret(PREFIX.refreshToken)),
          refreshExpiresAt: new Date(now.getTime() + 3_600_000),
          scopes: ["jobs:read"]
        })
      })
    )
    const refused = await RawOAuth.mcpCall(base, access)
    expect(refused.status).toBe(401)
    expect(JSON.parse(refused.text).error).toContain("https://elsewhere.example/mcp")
  })

  it("revoking the API key the owner signed in with ends its grants", async () => {
    const who = await server.customer()
    const clientId = await publicClient()
    const { tokens } = await RawOAuth.signIn(base, { clientId, credential: who.secret })
    expect((await RawOAuth.mcpCall(base, tokens.access_token)).status).toBe(200)
    await server.runtime.runPromise(Accounts.Accounts.use((accounts) => accounts.revokeKey(who.accountId, who.keyId)))
    expect((await RawOAuth.mcpCall(base, tokens.access_token)).status).toBe(401)
    const refresh = await RawOAuth.token(base, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: clientId
    })
    expect(refresh.body.error).toBe("invalid_grant")
  })
})

describe("the MCP endpoint", () => {
  it("accepts an API key as a bearer token, and serves the 2025-06-18 revision too", async () => {
    const who = await server.customer()
    const response = await RawOAuth.mcpCall(base, who.secret, {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "old", version: "1" } }
    })
    expect(response.status).toBe(200)
    expect(RawOAuth.rpcResult(response.text).result.protocolVersion).toBe("2025-06-18")
    const call = await RawOAuth.mcpCall(
      base,
      who.secret,
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "get_balance", arguments: {} } },
      { "mcp-protocol-version": "2025-06-18" }
    )
    expect(RawOAuth.rpcResult(call.text).result.structuredContent.availableMicros).toBe(10_000_000)
  })

  it("create_task takes an explicit idempotency key: a retry replays, another input conflicts", async () => {
    const who = await server.customer(1_000_000)
    const create = async (input: Record<string, unknown>, idempotencyKey: string) => {
      const response = await RawOAuth.mcpCall(
        base,
        who.secret,
        {
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "create_task", arguments: { model: "song-lyrics", input, idempotencyKey } }
        },
        { "mcp-protocol-version": "2025-11-25" }
      )
      return RawOAuth.rpcResult(response.text).result
    }
    const first = await create({ prompt: "tides" }, "order-42")
    expect(first.structuredContent).toMatchObject({ replayed: false, idempotencyKey: "order-42", status: "queued" })
    const again = await create({ prompt: "tides" }, "order-42")
    expect(again.structuredContent).toMatchObject({ id: first.structuredContent.id, replayed: true })
    const conflict = await create({ prompt: "storms" }, "order-42")
    expect(conflict.isError).toBe(true)
    expect(conflict.structuredContent.code).toBe("IDEMPOTENCY_CONFLICT")
    const malformed = await create({ prompt: "tides" }, "é".repeat(3))
    expect(malformed.structuredContent.code).toBe("INVALID_IDEMPOTENCY_KEY")
    const reserved = (await server.balances(who.accountId)).reservedMicros
    expect(reserved).toBe(first.structuredContent.priceMicros)
  })

  it("answers a tool the sign-in has no scope for with INSUFFICIENT_SCOPE", async () => {
    const reader = await server.customer(1_000_000, { scopes: ["jobs:read"] })
    const { tokens } = await RawOAuth.signIn(base, { clientId: await publicClient(), credential: reader.secret })
    const call = await RawOAuth.mcpCall(
      base,
      tokens.access_token,
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_balance", arguments: {} } },
      { "mcp-protocol-version": "2025-11-25" }
    )
    const result = RawOAuth.rpcResult(call.text).result
    expect(result.isError).toBe(true)
    expect(result.structuredContent.code).toBe("INSUFFICIENT_SCOPE")
  })
})
