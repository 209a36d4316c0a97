/**
 * The MCP endpoint in the composed server of `npm start` (main.ts `server` over `serverStorage`,
 * ephemeral port, no workers): on the embedded PGlite of a temporary data directory, and on the
 * PostgreSQL at TEST_DATABASE_URL (in a schema of its own) where the machine has one
 * (test/Dependencies.ts; always under CI). Discovery names
 * `<PUBLIC_URL origin>/mcp`, /mcp refuses a request without credentials with the OAuth
 * challenge, an API key reaches the kernel through it, and the sign-in codes the admin service
 * makes are kept in the same database as everything else. Without PUBLIC_URL (over the memory
 * stores), the public URL is the address the server is bound to.
 */
import { mkdtempSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { IpNetwork, NetAddress } from "effect/net"
import { SqlClient } from "effect/sql"
import { Ids, MediaReference, MediaUrls, type Money } from "@taskmeter/kernel"
import { OAuthStore } from "@taskmeter/mcp"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as AdminClient from "../src/admin/AdminClient.ts"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import * as Main from "../src/main.ts"
import * as ServerConfig from "../src/ServerConfig.ts"
import { databaseUrl, dropSchema, postgresReachable, schemaName } from "./support/stores.ts"

/** As `Config.URL` reads PUBLIC_URL: with a path, which the MCP endpoint leaves out. */
const PUBLIC_URL = "https://api.taskmeter.example/some/path"
const ORIGIN = "https://api.taskmeter.example"
const token = OperatorToken.generate()

const composed = (settings: Main.Settings) => {
  const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-mcp-mount-"))
  return Main.server({
    settings: { ...settings, publicUrl: Option.some(PUBLIC_URL), workers: false },
    adapters: [],
    pricesFile: Main.pricesFileOf(dataDir),
    token,
    dataDir
  }).pipe(
    Layer.provideMerge(Main.serverStorage(dataDir, settings)),
    Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir, adminPort: 0 }))
  )
}

const baseUrl = Effect.map(HttpServer.HttpServer, (server) => HttpServer.formatAddress(server.address))

const boundPort = Effect.map(HttpServer.HttpServer, (server) => (server.address as NetAddress.InetAddress).port)

const request = (path: string, init: RequestInit = {}) =>
  Effect.flatMap(baseUrl, (url) =>
    Effect.promise(async () => {
      const response = await fetch(`${url}${path}`, init)
      return { status: response.status, headers: response.headers, text: await response.text() }
    })
  )

const mcpPost = (body: unknown, headers: Record<string, string> = {}) =>
  request("/mcp", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(body)
  })

/** The JSON-RPC message of a response that may be an SSE stream. */
const rpcMessage = (text: string): any => {
  const data = text
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => line.slice(6))
  return JSON.parse(data.length > 0 ? data[data.length - 1]! : text)
}

const withAdmin = <A, E>(f: (admin: AdminClient.AdminClient["Service"]) => Effect.Effect<A, E>) =>
  Effect.flatMap(Main.adminUrl, (url) => AdminClient.AdminClient.use(f).pipe(Effect.provide(AdminClient.layer({ url, token }))))

const cases = (name: string, server: Layer.Layer<any, unknown>) =>
  layer(server, { excludeTestServices: true })(name, (it) => {
    describe("the MCP endpoint in the composed server", () => {
      it.effect("its protected resource metadata names <PUBLIC_URL origin>/mcp and the built-in authorization server", () =>
        Effect.gen(function* () {
          const reply = yield* request("/.well-known/oauth-protected-resource/mcp")
          expect(reply.status).toBe(200)
          expect(JSON.parse(reply.text)).toMatchObject({ resource: `${ORIGIN}/mcp`, authorization_servers: [ORIGIN] })
          const issuer = yield* request("/.well-known/oauth-authorization-server")
          expect(JSON.parse(issuer.text)).toMatchObject({ issuer: ORIGIN, token_endpoint: `${ORIGIN}/token` })
        })
      )

      it.effect("a POST /mcp without credentials is 401 with the OAuth challenge", () =>
        Effect.gen(function* () {
          const reply = yield* mcpPost({ jsonrpc: "2.0", id: 1, method: "tools/list" })
          expect(reply.status).toBe(401)
          expect(reply.headers.get("www-authenticate")).toContain(
            `Bearer resource_metadata="${ORIGIN}/.well-known/oauth-protected-resource/mcp"`
          )
          expect(JSON.parse(reply.text).code).toBe("AUTH_REQUIRED")
        })
      )

      it.effect("an API key reaches the kernel through /mcp; the API is served beside it", () =>
        Effect.gen(function* () {
          const { key } = yield* withAdmin((admin) =>
            admin.AccountCreate({ name: "mcp", creditsMicros: 3_000_000 as Money.Micros })
          )
          const call = yield* mcpPost(
            { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "get_balance", arguments: {} } },
            { authorization: `Bearer ${key.secret}`, "mcp-protocol-version": "2025-11-25" }
          )
          expect(call.status).toBe(200)
          expect(rpcMessage(call.text).result.structuredContent.availableMicros).toBe(3_000_000)
          expect((yield* request("/api/v1/prices")).status).toBe(200)
        })
      )

      it.effect("a sign-in code from the admin service is kept in the database of the other stores", () =>
        Effect.gen(function* () {
          const { account } = yield* withAdmin((admin) => admin.AccountCreate({ name: "signs-in" }))
          yield* withAdmin((admin) => admin.SignInCodeCreate({ accountId: account.id }))
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ readonly account_id: string }>`SELECT account_id FROM oauth_signin_codes
            WHERE account_id = ${account.id} AND used_at IS NULL`
          expect(rows).toHaveLength(1)
          const accounts = yield* sql`SELECT 1 FROM accounts WHERE id = ${account.id}`
          expect(accounts).toHaveLength(1)
        })
      )
    })
  })

cases("npm start on PGlite (no DATABASE_URL)", composed(Main.defaults))

if (postgresReachable) {
  const schema = schemaName("mcp")
  const dropAfter = Layer.effectDiscard(Effect.addFinalizer(() => dropSchema(schema)))
  const settings: Main.Settings = {
    ...Main.defaults,
    databaseUrl: Option.some(Redacted.make(databaseUrl)),
    databaseSchema: Option.some(schema)
  }
  cases("npm start with DATABASE_URL (PostgreSQL)", composed(settings).pipe(Layer.provideMerge(dropAfter)))
}

/** The server without PUBLIC_URL, on the memory stores, listening on `host` and an ephemeral port. */
const unconfigured = (host: string) => {
  const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-mcp-bound-"))
  return Main.server({
    settings: { ...Main.defaults, workers: false },
    adapters: [],
    pricesFile: Main.pricesFileOf(dataDir),
    token,
    dataDir
  }).pipe(
    Layer.provideMerge(Layer.merge(MemoryStore.layer, OAuthStore.layerMemory)),
    Layer.provide(ServerConfig.layerWith({ port: 0, host, dataDir, adminPort: 0 }))
  )
}

const boundCases = (host: string, named: string) =>
  layer(unconfigured(host), { excludeTestServices: true })(`without PUBLIC_URL, listening on ${host}`, (it) => {
    it.effect(`the MCP endpoint and the media links name http://${named}:<the bound port>`, () =>
      Effect.gen(function* () {
        const port = yield* boundPort
        expect(port).toBeGreaterThan(0)
        const origin = `http://${named}:${port}`
        const reply = yield* Effect.promise(() => fetch(`${origin}/.well-known/oauth-protected-resource/mcp`))
        expect(yield* Effect.promise(() => reply.json())).toMatchObject({
          resource: `${origin}/mcp`,
          authorization_servers: [origin]
        })
        const links = yield* MediaUrls.MediaUrls
        const link = yield* links.sign(Ids.makeAccountId(), MediaReference.make())
        expect(link.startsWith(`${origin}/api/v1/media-links/`)).toBe(true)
      })
    )
  })

boundCases("127.0.0.1", "127.0.0.1")
boundCases("0.0.0.0", "127.0.0.1")

/** The server with MCP_REGISTRATIONS_PER_HOUR=1, on the memory stores. */
const registrationLimited = () => {
  const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-mcp-register-"))
  return Main.server({
    settings: { ...Main.defaults, workers: false, mcpRegistrationsPerHour: 1 },
    adapters: [],
    pricesFile: Main.pricesFileOf(dataDir),
    token,
    dataDir
  }).pipe(
    Layer.provideMerge(Layer.merge(MemoryStore.layer, OAuthStore.layerMemory)),
    Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir, adminPort: 0 }))
  )
}

layer(registrationLimited(), { excludeTestServices: true })("MCP_REGISTRATIONS_PER_HOUR", (it) => {
  it.effect("limits the MCP client registrations of one address", () =>
    Effect.gen(function* () {
      const register = request("/register", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ redirect_uris: ["https://client.example/callback"], token_endpoint_auth_method: "none" })
      })
      expect((yield* register).status).toBe(201)
      const refused = yield* register
      expect(refused.status).toBe(429)
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
    })
  )

  it.effect("is read from the environment, with the MCP package's defaults", () =>
    Effect.gen(function* () {
      const read = (env: Record<string, string>) =>
        Main.config.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })))
      const unset = yield* read({})
      expect([unset.mcpRegistrationsPerHour, unset.mcpRegistrationsPerHourTotal]).toEqual([20, 1000])
      const set = yield* read({ MCP_REGISTRATIONS_PER_HOUR: "5", MCP_REGISTRATIONS_PER_HOUR_TOTAL: "50" })
      expect([set.mcpRegistrationsPerHour, set.mcpRegistrationsPerHourTotal]).toEqual([5, 50])
      expect((yield* Effect.flip(read({ MCP_REGISTRATIONS_PER_HOUR: "0" })))._tag).toBe("ConfigError")
    })
  )
})

/** The server with MCP_ALLOWED_ORIGINS set, on the memory stores. */
const originsAllowed = () => {
  const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-mcp-origins-"))
  return Main.server({
    settings: {
      ...Main.defaults,
      workers: false,
      mcpAllowedOrigins: ["https://console.example"],
      mcpAllowedHosts: ["taskmeter:8787"]
    },
    adapters: [],
    pricesFile: Main.pricesFileOf(dataDir),
    token,
    dataDir
  }).pipe(
    Layer.provideMerge(Layer.merge(MemoryStore.layer, OAuthStore.layerMemory)),
    Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir }))
  )
}

layer(originsAllowed(), { excludeTestServices: true })("MCP_ALLOWED_ORIGINS", (it) => {
  it.effect("/mcp answers the configured and the server's own origin, and refuses others with 403", () =>
    Effect.gen(function* () {
      const own = yield* baseUrl
      const ping = { jsonrpc: "2.0", id: 1, method: "ping" }
      // Past the guard, the request still needs credentials.
      expect((yield* mcpPost(ping, { origin: "https://console.example" })).status).toBe(401)
      expect((yield* mcpPost(ping, { origin: own })).status).toBe(401)
      const refused = yield* mcpPost(ping, { origin: "https://evil.example" })
      expect(refused.status).toBe(403)
      expect(JSON.parse(refused.text).code).toBe("PERMISSION_DENIED")
      // A Host of MCP_ALLOWED_HOSTS (a proxy's upstream name) passes; another is refused.
      const port = yield* boundPort
      const hostStatus = (host: string) =>
        Effect.callback<number>((resume) => {
          const call = httpRequest(
            { host: "127.0.0.1", port, path: "/mcp", method: "POST", headers: { host, "content-type": "application/json" } },
            (response) => {
              response.resume()
              resume(Effect.succeed(response.statusCode ?? 0))
            }
          )
          call.on("error", (error) => resume(Effect.die(error)))
          call.end(JSON.stringify(ping))
        })
      expect(yield* hostStatus("taskmeter:8787")).toBe(401)
      expect(yield* hostStatus("taskmeter:9999")).toBe(403)
    })
  )

  it.effect("the MCP settings are read from the environment", () =>
    Effect.gen(function* () {
      const read = (env: Record<string, string>) =>
        Main.config.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })))
      const unset = yield* read({})
      expect([unset.mcpAllowedOrigins, unset.mcpAllowedHosts, unset.mcpAuthorizationsPerMinute, unset.mcpSignInMaxDays]).toEqual([
        [],
        [],
        30,
        90
      ])
      const set = yield* read({
        MCP_ALLOWED_ORIGINS: "https://console.example/, http://localhost:5173",
        MCP_ALLOWED_HOSTS: "taskmeter:8787, api.internal",
        MCP_AUTHORIZATIONS_PER_MINUTE: "5",
        MCP_SIGN_IN_MAX_DAYS: "30"
      })
      expect([set.mcpAllowedOrigins, set.mcpAuthorizationsPerMinute, set.mcpSignInMaxDays]).toEqual([
        ["https://console.example", "http://localhost:5173"],
        5,
        30
      ])
      expect(set.mcpAllowedHosts).toEqual(["taskmeter:8787", "api.internal"])
      for (const env of [
        { MCP_ALLOWED_ORIGINS: "console.example" },
        { MCP_ALLOWED_HOSTS: "http://x" },
        { MCP_SIGN_IN_MAX_DAYS: "0" }
      ] as Array<Record<string, string>>) {
        expect((yield* Effect.flip(read(env)))._tag).toBe("ConfigError")
      }
    })
  )
})

/** The server behind a trusted proxy on 127.0.0.0/8, with MCP_AUTHORIZATIONS_PER_MINUTE=1. */
const signInLimited = () => {
  const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-mcp-authorize-"))
  return Main.server({
    settings: {
      ...Main.defaults,
      workers: false,
      mcpAuthorizationsPerMinute: 1,
      trustedProxies: [IpNetwork.fromStringUnsafe("127.0.0.0/8")]
    },
    adapters: [],
    pricesFile: Main.pricesFileOf(dataDir),
    token,
    dataDir
  }).pipe(
    Layer.provideMerge(Layer.merge(MemoryStore.layer, OAuthStore.layerMemory)),
    Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir }))
  )
}

layer(signInLimited(), { excludeTestServices: true })("MCP_AUTHORIZATIONS_PER_MINUTE", (it) => {
  it.effect("limits /authorize per client address, as TRUSTED_PROXIES names it", () =>
    Effect.gen(function* () {
      const from = (client: string) =>
        Effect.map(request("/authorize", { headers: { "x-forwarded-for": client } }), (r) => r.status)
      // One a minute: of three in a row, the first is answered (400: no client) and at least one
      // of the others refused, even if a minute ends between two of them.
      const first = yield* from("203.0.113.9")
      const later = [yield* from("203.0.113.9"), yield* from("203.0.113.9")]
      expect(first).toBe(400)
      expect(later).toContain(429)
      // Another client behind the same proxy has its own count.
      expect(yield* from("198.51.100.7")).toBe(400)
    })
  )
})
