/**
 * The DNS-rebinding guard of /mcp and its credentials: an Origin or Host outside the allowed
 * ones is 403 even with a valid key; no Origin is allowed; configured origins are; API keys
 * work as Bearer tokens and as x-api-key.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { TransportGuard } from "../src/index.ts"
import * as RawOAuth from "./support/RawOAuth.ts"
import * as TestServer from "./support/TestServer.ts"

describe("TransportGuard", () => {
  const guard = TransportGuard.make("https://api.example.com", {
    allowedOrigins: ["https://app.example.com/", "http://localhost:5173"],
    allowedHosts: ["10.0.0.5:8787"]
  })
  const allowed = (headers: { origin?: string; host?: string }) => guard.check(headers) === undefined

  it("allows the public origin, configured origins, and requests without an Origin", () => {
    expect(allowed({})).toBe(true)
    expect(allowed({ origin: "https://api.example.com" })).toBe(true)
    expect(allowed({ origin: "https://api.example.com:443" })).toBe(true)
    expect(allowed({ origin: "https://app.example.com" })).toBe(true)
    expect(allowed({ origin: "http://localhost:5173" })).toBe(true)
  })

  it("refuses any other origin, malformed and opaque ones included", () => {
    for (const origin of [
      "http://evil.example.com",
      "https://api.example.com.evil.example",
      "http://api.example.com",
      "http://localhost:5174",
      "null",
      "not a url",
      "file://x"
    ]) {
      const refusal = guard.check({ origin })
      expect(refusal?.status, origin).toBe(403)
      expect(refusal?.code).toBe("PERMISSION_DENIED")
    }
  })

  it("allows the public host (with or without its default port), configured hosts and loopback names on any port", () => {
    for (const host of [
      "api.example.com",
      "api.example.com:443",
      "API.example.com",
      "10.0.0.5:8787",
      "localhost:3000",
      "127.0.0.1",
      "[::1]:8787"
    ]) {
      expect(allowed({ host }), host).toBe(true)
    }
    for (const host of ["evil.example.com", "api.example.com:8443", "10.0.0.5:9999", "10.0.0.6:8787", "a b"]) {
      expect(allowed({ host }), host).toBe(false)
    }
  })

  it("refuses a malformed configured origin or host when it is made", () => {
    expect(() => TransportGuard.make("https://api.example.com", { allowedOrigins: ["app.example.com"] })).toThrow()
    expect(() => TransportGuard.make("https://api.example.com", { allowedHosts: ["http://app.example.com"] })).toThrow()
    expect(TransportGuard.normalizeHost("Taskmeter:8787")).toBe("taskmeter:8787")
    expect(TransportGuard.normalizeHost("[::1]:80")).toBe("[::1]")
    for (const bad of ["a b", "evil.example/x", "user@host", ""]) expect(TransportGuard.normalizeHost(bad), bad).toBeUndefined()
  })
})

let server: TestServer.TestServer
let base: string

beforeAll(async () => {
  server = await TestServer.make({ allowedOrigins: ["https://inspector.example"] })
  base = server.baseUrl
})

afterAll(async () => {
  await server?.close()
})

const initialize = (credentials: Record<string, string>, headers: Record<string, string> = {}) =>
  RawOAuth.mcpCall(base, undefined, undefined, { ...credentials, ...headers })

describe("/mcp over HTTP", () => {
  it("refuses a foreign Origin with 403 even with a valid key, and before looking at credentials", async () => {
    const who = await server.customer()
    for (const origin of ["http://evil.example.com", "null"]) {
      const refused = await initialize({ authorization: `Bearer ${who.secret}` }, { origin })
      expect(refused.status).toBe(403)
      expect(JSON.parse(refused.text).code).toBe("PERMISSION_DENIED")
      expect(refused.headers.get("access-control-allow-origin")).toBeNull()
    }
    expect((await initialize({}, { origin: "http://evil.example.com" })).status).toBe(403)
    const preflight = await fetch(`${base}/mcp`, { method: "OPTIONS", headers: { origin: "http://evil.example.com" } })
    expect(preflight.status).toBe(403)
  })

  it("answers its own origin, a configured one, and clients that send none", async () => {
    const who = await server.customer()
    for (const headers of [{}, { origin: base }, { origin: "https://inspector.example" }] as Array<Record<string, string>>) {
      const answered = await initialize({ authorization: `Bearer ${who.secret}` }, headers)
      expect(answered.status).toBe(200)
      expect(RawOAuth.rpcResult(answered.text).result.serverInfo.name).toBe("taskmeter")
    }
  })

  it("refuses a request addressed to a foreign Host (DNS rebinding)", async () => {
    const who = await server.customer()
    const { request } = await import("node:http")
    const status = await new Promise<number>((resolve, reject) => {
      const call = request(
        `${base}/mcp`,
        {
          method: "POST",
          headers: {
            host: "evil.example.com",
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            authorization: `Bearer ${who.secret}`
          }
        },
        (response) => {
          response.resume()
          resolve(response.statusCode ?? 0)
        }
      )
      call.on("error", reject)
      call.end(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }))
    })
    expect(status).toBe(403)
  })

  it("takes an API key as x-api-key, as the API does, but no OAuth token there", async () => {
    const who = await server.customer()
    const call = await RawOAuth.mcpCall(
      base,
      undefined,
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "get_balance", arguments: {} } },
      { "x-api-key": who.secret, "mcp-protocol-version": "2025-11-25" }
    )
    expect(call.status).toBe(200)
    expect(RawOAuth.rpcResult(call.text).result.structuredContent.availableMicros).toBe(10_000_000)
    const wrong = await initialize({ "x-api-key": "tm_wrong" })
    expect(wrong.status).toBe(401)
    expect(wrong.headers.get("www-authenticate")).toContain('error="invalid_token"')
    const oauthToken = await initialize({ "x-api-key": "tmat_not_an_api_key" })
    expect(oauthToken.status).toBe(401)
  })
})
