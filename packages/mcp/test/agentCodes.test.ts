/**
 * "Connect an agent" end to end: a console session makes a one-time code with
 * POST /api/v1/auth/agent-codes, and the MCP sign-in page takes it, once. An API key there is
 * PERMISSION_DENIED; a session's POST without the CSRF token is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as RawOAuth from "./support/RawOAuth.ts"
import * as TestServer from "./support/TestServer.ts"

let server: TestServer.TestServer
let base: string

beforeAll(async () => {
  server = await TestServer.make()
  base = server.baseUrl
})

afterAll(async () => {
  await server?.close()
})

const signUp = async () => {
  const response = await fetch(`${base}/api/v1/auth/sign-up`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: base },
    body: JSON.stringify({
      email: `agent-${crypto.randomUUID().slice(0, 8)}@example.com`,
      password: "correct horse battery staple"
    })
  })
  const body = (await response.json()) as { csrfToken: string }
  const cookie = response.headers
    .getSetCookie()
    .find((c) => c.startsWith("taskmeter_session="))!
    .split(";")[0]!
  return { cookie, csrfToken: body.csrfToken }
}

const agentCode = (headers: Record<string, string>) =>
  fetch(`${base}/api/v1/auth/agent-codes`, { method: "POST", headers }).then(async (response) => ({
    status: response.status,
    body: (await response.json()) as any
  }))

describe("POST /api/v1/auth/agent-codes", () => {
  it("makes a code under a session that the MCP sign-in takes once", async () => {
    const who = await signUp()
    const before = Date.now()
    const made = await agentCode({ cookie: who.cookie, origin: base, "x-csrf-token": who.csrfToken })
    expect(made.status).toBe(201)
    expect(made.body.code).toMatch(/^tmsi_/)
    expect(made.body.mcpUrl).toBe(`${base}/mcp`)
    const lifetime = Date.parse(made.body.expiresAt) - before
    expect(lifetime).toBeGreaterThan(590_000)
    expect(lifetime).toBeLessThanOrEqual(605_000)

    const clientId = (await RawOAuth.register(base)).body.client_id as string
    const { tokens } = await RawOAuth.signIn(base, { clientId, credential: made.body.code })
    expect((await RawOAuth.mcpCall(base, tokens.access_token)).status).toBe(200)
    await expect(RawOAuth.signIn(base, { clientId, credential: made.body.code })).rejects.toThrow(/no code/)
  })

  it("refuses an API key (PERMISSION_DENIED) and a session's POST without the CSRF token", async () => {
    const customer = await server.customer()
    const byKey = await agentCode({ authorization: `Bearer ${customer.secret}` })
    expect(byKey.status).toBe(403)
    expect(byKey.body.code).toBe("PERMISSION_DENIED")
    const who = await signUp()
    const noCsrf = await agentCode({ cookie: who.cookie, origin: base })
    expect(noCsrf.status).toBe(403)
    expect(noCsrf.body.code).toBe("CSRF_REJECTED")
    const signedOut = await agentCode({ origin: base })
    expect(signedOut.status).toBe(401)
  })
})
