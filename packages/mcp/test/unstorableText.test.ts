/**
 * Strings PostgreSQL cannot hold (U+0000, unpaired surrogates) in OAuth requests and MCP tool
 * arguments: refused as malformed requests in each endpoint's own error format, before anything
 * is stored or counted, on a server whose OAuth store is PostgreSQL; no answer names an
 * internal operation.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Layer } from "effect"
import { OAuthStorePg } from "../src/index.ts"
import { firstUnstorable, firstUnstorableParam, isStorable } from "../src/internal/StorableText.ts"
import * as RawOAuth from "./support/RawOAuth.ts"
import { REDIRECT_URI } from "./support/RawOAuth.ts"
import { postgres } from "./support/TestDatabase.ts"
import * as TestServer from "./support/TestServer.ts"

const BAD = ["\u0000", "\ud800", "a\udc00b"] as const

describe("storableText", () => {
  it("tells NUL and unpaired surrogates from text PostgreSQL stores", () => {
    for (const bad of BAD) expect(isStorable(bad)).toBe(false)
    for (const good of ["", "plain", "é", "😀", "\ud83d\ude00"]) expect(isStorable(good)).toBe(true)
  })

  it("names the first offending path in JSON and in form parameters", () => {
    expect(firstUnstorable({ a: ["ok", { b: "x\u0000" }] })).toBe("a[1].b")
    expect(firstUnstorable({ ["k\u0000"]: 1 })).toBe('["k\\u0000"]')
    expect(firstUnstorable({ a: 1, b: [true, null] })).toBeUndefined()
    expect(firstUnstorable("\ud800")).toBe("the value")
    expect(firstUnstorable({ task_id: "\u0000" }, "arguments")).toBe("arguments.task_id")
    expect(firstUnstorableParam(new URLSearchParams({ ok: "1", state: "\u0000" }))).toBe("state")
    expect(firstUnstorableParam(new URLSearchParams({ ok: "1" }))).toBeUndefined()
  })
})

let server: TestServer.TestServer
let base: string
/** Registered first: one of the two registrations the limit allows from 127.0.0.1. */
let clientId: string

beforeAll(async () => {
  server = await TestServer.make({
    registrationLimit: { perSource: 2 },
    oauthStore: OAuthStorePg.layer.pipe(Layer.provide(postgres), Layer.orDie)
  })
  base = server.baseUrl
  clientId = (await RawOAuth.register(base)).body.client_id
})

afterAll(async () => {
  await server?.close()
})

const noInternals = (text: string) => {
  expect(text).not.toMatch(/OAuthStore|insert|select|postgres|SqlError/i)
}

describe("over HTTP, with the OAuth store on PostgreSQL", () => {
  it("refuses registrations holding such strings with invalid_client_metadata, and counts none of them", async () => {
    const cases: Array<Record<string, unknown>> = [
      { client_name: "\u0000" },
      { redirect_uris: [`${REDIRECT_URI}?x=\ud800`] },
      { software_id: "a\udc00" },
      { ["extension\u0000"]: "x" }
    ]
    for (const metadata of cases) {
      const refused = await RawOAuth.register(base, metadata)
      expect(refused.status).toBe(400)
      expect(refused.body.error).toBe("invalid_client_metadata")
      expect(refused.body.error_description).toContain("cannot be stored")
      noInternals(JSON.stringify(refused.body))
    }
    // One of the two registrations the limit allows is left.
    expect((await RawOAuth.register(base)).status).toBe(201)
    expect((await RawOAuth.register(base)).status).toBe(429)
  })

  it("answers /authorize with a 400 page for a bad client_id or redirect_uri, else invalid_request to the client", async () => {
    const params = (overrides: Record<string, string>) => ({
      response_type: "code",
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      code_challenge: RawOAuth.pkce().challenge,
      code_challenge_method: "S256",
      state: "s1",
      ...overrides
    })
    for (const overrides of [{ client_id: "mcpc_\u0000" }, { redirect_uri: `${REDIRECT_URI}\u0000` }] as Array<
      Record<string, string>
    >) {
      const page = await RawOAuth.authorize(base, params(overrides))
      expect(page.status).toBe(400)
      expect(page.location).toBeNull()
      expect(page.html).toContain("cannot be stored")
      noInternals(page.html)
    }
    const badState = await RawOAuth.authorize(base, params({ state: "\u0000" }))
    expect(badState.status).toBe(303)
    const location = new URL(badState.location!)
    expect(location.searchParams.get("error")).toBe("invalid_request")
    expect(location.searchParams.get("state")).toBeNull()
    const badScope = await RawOAuth.authorize(base, params({ scope: "jobs:read\u0000" }))
    expect(new URL(badScope.location!).searchParams.get("error")).toBe("invalid_request")
    expect(new URL(badScope.location!).searchParams.get("state")).toBe("s1")
  })

  it("answers the sign-in form with a 400 page", async () => {
    const page = await RawOAuth.authorize(base, {
      response_type: "code",
      client_id: "mcpc_unknown",
      redirect_uri: REDIRECT_URI
    })
    expect(page.status).toBe(400)
    const forged = { ...page, pending: "\u0000", csrf: "x", cookie: undefined }
    const answer = await RawOAuth.decide(base, forged, "\u0000")
    expect(answer.status).toBe(400)
    expect(answer.html).toContain("cannot be stored")
    noInternals(answer.html)
  })

  it("answers /token and /revoke with invalid_request", async () => {
    const basic = Buffer.from(`%00:x`).toString("base64")
    const responses = [
      await RawOAuth.token(base, { grant_type: "authorization_code", code: "x", code_verifier: "y", client_id: "\u0000" }),
      await RawOAuth.token(base, { grant_type: "refresh_token", refresh_token: "\u0000", client_id: "mcpc_x" }),
      await RawOAuth.token(
        base,
        { grant_type: "authorization_code", code: "x", code_verifier: "y" },
        { authorization: `Basic ${basic}` }
      ),
      await RawOAuth.revoke(base, { token: "\u0000", client_id: "mcpc_x" })
    ]
    for (const response of responses) {
      expect(response.status).toBe(400)
      expect(response.body.error).toBe("invalid_request")
      noInternals(JSON.stringify(response.body))
    }
  })

  it("answers MCP tool arguments holding such strings with an INVALID_REQUEST tool error", async () => {
    const who = await server.customer()
    for (const bad of BAD) {
      for (const [name, args] of [
        ["get_task", { id: bad }],
        ["search_models", { query: bad }],
        ["get_task", { [bad]: "x" }]
      ] as const) {
        const response = await RawOAuth.mcpCall(
          base,
          who.secret,
          { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } },
          { "mcp-protocol-version": "2025-11-25" }
        )
        expect(response.status).toBe(200)
        const result = RawOAuth.rpcResult(response.text).result
        expect(result.isError).toBe(true)
        expect(result.structuredContent.code).toBe("INVALID_REQUEST")
        noInternals(response.text)
      }
    }
  })

  it("answers create_task and get_model with the API's codes for them: the model's MODEL_NOT_FOUND, the input's INVALID_MODEL_INPUT naming the field, the idempotencyKey's INVALID_IDEMPOTENCY_KEY", async () => {
    const who = await server.customer()
    const model = "alpha-2-lite-text-to-image-economy"
    for (const bad of BAD) {
      const cases = [
        ["create_task", { model, input: { prompt: `a lighthouse${bad}` } }, "INVALID_MODEL_INPUT", "input.prompt"],
        ["create_task", { model, input: { prompt: "a lighthouse", [`x${bad}`]: 1 } }, "INVALID_MODEL_INPUT", "input"],
        ["get_model", { model, input: { prompt: `a lighthouse${bad}` } }, "INVALID_MODEL_INPUT", "input.prompt"],
        [
          "create_task",
          { model, input: { prompt: "a lighthouse" }, idempotencyKey: `key${bad}` },
          "INVALID_IDEMPOTENCY_KEY",
          "idempotencyKey"
        ],
        ["create_task", { model: `${model}${bad}`, input: { prompt: "a lighthouse" } }, "MODEL_NOT_FOUND", "alpha-2-lite"],
        ["get_model", { model: `${model}${bad}` }, "MODEL_NOT_FOUND", "alpha-2-lite"]
      ] as const
      for (const [name, args, code, names] of cases) {
        const response = await RawOAuth.mcpCall(
          base,
          who.secret,
          { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } },
          { "mcp-protocol-version": "2025-11-25" }
        )
        expect(response.status).toBe(200)
        const result = RawOAuth.rpcResult(response.text).result
        expect(result.isError, `${name} ${JSON.stringify(args)}`).toBe(true)
        expect(result.structuredContent.code, `${name} ${JSON.stringify(args)}`).toBe(code)
        expect(result.structuredContent.error).toContain(names)
        noInternals(response.text)
      }
    }
    expect(await server.balances(who.accountId)).toMatchObject({ reservedMicros: 0 })
  })
})
