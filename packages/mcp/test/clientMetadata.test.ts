/**
 * Client metadata rules: which redirect URIs a client may register and how they match, which
 * client_id URLs may be fetched, and how a metadata document fetch is bounded.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Logger, Result } from "effect"
import { ClientIdMetadata, ClientMetadata } from "../src/index.ts"

describe("redirect URIs", () => {
  it("allows https, loopback http and app schemes; refuses the rest", () => {
    for (const uri of [
      "https://app.example.com/oauth/callback",
      "http://127.0.0.1:33418/callback",
      "http://localhost/cb",
      "http://[::1]:8080/cb",
      "cursor://anysphere.cursor-mcp/oauth/callback",
      "com.example.app:/oauth2redirect"
    ])
      expect(ClientMetadata.redirectUriProblem(uri)).toBeUndefined()
    for (const uri of [
      "http://app.example.com/cb",
      "http://127.0.0.2.example.com/cb",
      "https://app.example.com/cb#fragment",
      "https://user:pass@app.example.com/cb",
      "javascript:alert(1)",
      "data:text/html,hi",
      "relative/path"
    ])
      expect(ClientMetadata.redirectUriProblem(uri)).toBeDefined()
  })

  it("matches exactly, except for the port of a loopback address", () => {
    expect(ClientMetadata.redirectUriMatches("https://a.example/cb", "https://a.example/cb")).toBe(true)
    expect(ClientMetadata.redirectUriMatches("https://a.example/cb", "https://a.example/cb/")).toBe(false)
    expect(ClientMetadata.redirectUriMatches("https://a.example:8443/cb", "https://a.example:9443/cb")).toBe(false)
    expect(ClientMetadata.redirectUriMatches("http://127.0.0.1/cb", "http://127.0.0.1:51234/cb")).toBe(true)
    expect(ClientMetadata.redirectUriMatches("http://127.0.0.1/cb", "http://127.0.0.1:51234/other")).toBe(false)
    expect(ClientMetadata.redirectUriMatches("http://127.0.0.1/cb", "http://localhost:51234/cb")).toBe(false)
    expect(ClientMetadata.redirectUriMatches("http://127.0.0.1/cb?x=1", "http://127.0.0.1:5/cb?x=2")).toBe(false)
  })

  it("names where the browser returns", () => {
    expect(ClientMetadata.redirectTarget("https://app.example.com/cb")).toBe("app.example.com")
    expect(ClientMetadata.redirectTarget("http://127.0.0.1:3000/cb")).toBe("127.0.0.1:3000")
    expect(ClientMetadata.redirectTarget("cursor://anysphere.cursor-mcp/oauth")).toBe("cursor://")
  })

  it("parses registration metadata with RFC 7591 defaults", () => {
    const parsed = ClientMetadata.parse({ redirect_uris: ["https://a.example/cb"], unknown_member: 1 })
    expect(Result.isSuccess(parsed) && parsed.success).toMatchObject({
      tokenEndpointAuthMethod: "client_secret_basic",
      grantTypes: ["authorization_code", "refresh_token"],
      clientName: null
    })
    const wrong = ClientMetadata.parse({ redirect_uris: "https://a.example/cb" })
    expect(Result.isFailure(wrong) && wrong.failure.error).toBe("invalid_client_metadata")
  })
})

describe("client_id URLs", () => {
  const strict = { allowHttpLoopback: false }
  it("fetches only public https URLs with a path", () => {
    expect(ClientIdMetadata.urlProblem("https://app.example.com/oauth/client.json", strict)).toBeUndefined()
    for (const url of [
      "https://app.example.com/",
      "http://app.example.com/client.json",
      "https://127.0.0.1/client.json",
      "https://10.1.2.3/client.json",
      "https://192.168.0.10/client.json",
      "https://[::1]/client.json",
      "https://169.254.169.254/latest/meta-data",
      "https://localhost/client.json",
      "https://app.example.com/a/../client.json",
      "https://APP.example.com/client.json",
      "https://user@app.example.com/client.json",
      "https://app.local/client.json",
      "https://metadata.google.internal/client.json",
      "https://2130706433/client.json"
    ])
      expect(ClientIdMetadata.urlProblem(url, strict)).toBeDefined()
  })

  it("connects to port 443 only", () => {
    expect(ClientIdMetadata.urlProblem("https://app.example.com:8443/client.json", strict)).toBe(
      "must be on port 443 (no other port)"
    )
    expect(ClientIdMetadata.urlProblem("https://app.example.com:443/client.json", strict)).toContain("normalised form")
  })

  it("allows http on a loopback address only when configured to", () => {
    expect(ClientIdMetadata.urlProblem("http://127.0.0.1:4000/client.json", strict)).toBeDefined()
    expect(ClientIdMetadata.urlProblem("http://127.0.0.1:4000/client.json", { allowHttpLoopback: true })).toBeUndefined()
    expect(ClientIdMetadata.urlProblem("http://example.com/client.json", { allowHttpLoopback: true })).toBeDefined()
  })
})

describe("fetching a metadata document", () => {
  let origin = ""
  let close = () => Promise.resolve()

  beforeAll(async () => {
    const server = createServer((request, response) => {
      const self = `${origin}${request.url}`
      const document = (extra: object = {}) =>
        JSON.stringify({ client_id: self, client_name: "Doc", redirect_uris: ["http://127.0.0.1:9/cb"], ...extra })
      switch (request.url) {
        case "/ok":
          return void response.writeHead(200, { "content-type": "application/json" }).end(document())
        case "/other-id":
          return void response.writeHead(200, { "content-type": "application/json" }).end(document({ client_id: `${origin}/ok` }))
        case "/secret":
          return void response
            .writeHead(200, { "content-type": "application/json" })
            .end(document({ token_endpoint_auth_method: "client_secret_basic" }))
        case "/html":
          return void response.writeHead(200, { "content-type": "text/html" }).end("<html></html>")
        case "/big":
          return void response
            .writeHead(200, { "content-type": "application/json" })
            .end(document({ padding: "x".repeat(20_000) }))
        case "/redirect":
          return void response.writeHead(302, { location: `${origin}/ok` }).end()
        case "/slow":
          return void setTimeout(() => response.writeHead(200, { "content-type": "application/json" }).end(document()), 2_000)
        default:
          return void response.writeHead(404).end()
      }
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    close = () => new Promise((resolve) => server.close(() => resolve()))
  })

  afterAll(() => close())

  const fetchDoc = (path: string) =>
    Effect.runPromise(
      Effect.result(
        ClientIdMetadata.fetchClient(`${origin}${path}`, {
          ...ClientIdMetadata.defaults,
          timeoutMs: 500,
          allowHttpLoopback: true
        })
      )
    )

  it("reads a document that names itself", async () => {
    const result = await fetchDoc("/ok")
    expect(Result.isSuccess(result) && result.success).toMatchObject({
      clientName: "Doc",
      redirectUris: ["http://127.0.0.1:9/cb"],
      tokenEndpointAuthMethod: "none"
    })
  })

  it.each([
    ["/other-id", "must name itself"],
    ["/secret", "public here"]
  ])("refuses %s, a document that does not pass", async (path, reason) => {
    const result = await fetchDoc(path)
    expect(Result.isFailure(result)).toBe(true)
    if (Result.isFailure(result)) {
      expect(result.failure.error).toBe("invalid_client")
      expect(result.failure.description).toContain(reason)
    }
  })

  it("answers every failed fetch the same, logging the reason", async () => {
    const logged: Array<string> = []
    const logs = Logger.layer([Logger.make((options) => void logged.push((options.message as Array<unknown>).join(" ")))])
    for (const [path, reason] of [
      ["/html", "served as text/html"],
      ["/big", "larger than"],
      ["/missing", "HTTP 404"],
      // Redirects are not followed.
      ["/redirect", "redirect (HTTP 302)"],
      ["/slow", "took longer than 500 ms"]
    ]) {
      logged.length = 0
      const result = await Effect.runPromise(
        Effect.result(
          ClientIdMetadata.fetchClient(`${origin}${path}`, {
            ...ClientIdMetadata.defaults,
            timeoutMs: 500,
            allowHttpLoopback: true
          })
        ).pipe(Effect.provide(logs))
      )
      expect(Result.isFailure(result) && result.failure, path).toMatchObject({
        error: "invalid_client",
        description: `The client's metadata document at ${origin}${path} could not be fetched.`
      })
      expect(logged, path).toEqual([expect.stringContaining(reason)])
    }
  })
})

describe("connecting to a metadata document's host", () => {
  let port = 0
  let close = () => Promise.resolve()

  // On 127.0.0.2 only (Linux routes all of 127/8 to the loopback interface), where
  // localhost's own addresses, 127.0.0.1 and ::1, find nothing.
  beforeAll(async () => {
    const server = createServer((request, response) => {
      const self = `http://localhost:${port}${request.url}`
      response
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ client_id: self, client_name: "Pinned", redirect_uris: ["http://127.0.0.1:9/cb"] }))
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.2", resolve))
    port = (server.address() as AddressInfo).port
    close = () => new Promise((resolve) => server.close(() => resolve()))
  })

  afterAll(() => close())

  it("connects to the address it vetted, not to one the host name resolves to again", async () => {
    const asked: Array<string> = []
    const result = await Effect.runPromise(
      Effect.result(
        ClientIdMetadata.fetchClient(`http://localhost:${port}/client.json`, {
          ...ClientIdMetadata.defaults,
          allowHttpLoopback: true,
          resolve: async (hostname) => {
            asked.push(hostname)
            return [{ address: "127.0.0.2", family: 4 }]
          }
        })
      )
    )
    expect(Result.isSuccess(result) && result.success.clientName).toBe("Pinned")
    expect(asked).toEqual(["localhost"])
  })
})
