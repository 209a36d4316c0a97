/**
 * The whole flow as a real MCP host runs it, under the current revision (2026-07-28) and the
 * 2025-11-25 one: the official client SDK discovers the authorization server from the 401,
 * identifies itself (a Client ID Metadata Document, or dynamic registration), sends the owner to
 * the sign-in page (headless Chromium signs in with an API key and approves), exchanges the code
 * with PKCE, calls each of the seven tools against the real kernel with a worker running tasks on
 * the simulated provider, downloads a result through the signed link a tool gave (no API key),
 * and refreshes its token when the server refuses the old one.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import type { Client } from "@modelcontextprotocol/client"
import { Effect } from "effect"
import { Catalog } from "@taskmeter/kernel"
import * as Browser from "./support/Browser.ts"
import * as RawOAuth from "./support/RawOAuth.ts"
import { connect, MemoryOAuthProvider } from "./support/SdkClient.ts"
import type { Revision } from "./support/SdkClient.ts"
import * as TestServer from "./support/TestServer.ts"

const IMAGE_MODEL = "alpha-2-lite-text-to-image-economy"
const CREDITS = 5_000_000

let server: TestServer.TestServer
let owner: Browser.Owner
let documents: { readonly url: (path: string) => string; readonly hits: Array<string>; readonly close: () => Promise<void> }

/** Serves Client ID Metadata Documents: each path names itself as client_id. */
const serveDocuments = async () => {
  const hits: Array<string> = []
  const http = createServer((request, response) => {
    hits.push(request.url ?? "")
    const clientId = `http://127.0.0.1:${(http.address() as AddressInfo).port}${request.url}`
    response.writeHead(200, { "content-type": "application/json" })
    response.end(
      JSON.stringify({
        client_id: clientId,
        client_name: "Metadata Document Client",
        redirect_uris: ["http://127.0.0.1:7655/callback"],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none"
      })
    )
  })
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve))
  const port = (http.address() as AddressInfo).port
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    hits,
    close: () => new Promise<void>((resolve) => http.close(() => resolve()))
  }
}

beforeAll(async () => {
  server = await TestServer.make({ simulatedDelayMs: 2_500 })
  owner = await Browser.launch()
  documents = await serveDocuments()
})

afterAll(async () => {
  await owner?.close()
  await documents?.close()
  await server?.close()
})

const call = async (client: Client, name: string, args: Record<string, unknown>) => {
  const result = await client.callTool({ name, arguments: args })
  return { ...result, data: result.structuredContent as any }
}

const textOf = (result: { readonly content?: ReadonlyArray<{ readonly type: string; readonly text?: string }> }) =>
  (result.content ?? []).map((block) => block.text ?? "").join("\n")

describe.each([
  { revision: "2026-07-28" as Revision, identity: "metadata document" },
  { revision: "2025-11-25" as Revision, identity: "dynamic registration" }
])("revision $revision, client identified by $identity", ({ revision, identity }) => {
  it("signs in with OAuth, runs each tool, and refreshes its token", async () => {
    const who = await server.customer(CREDITS)
    const mcpUrl = `${server.baseUrl}/mcp`
    const documentUrl = documents.url(`/clients/${revision}.json`)
    const provider = new MemoryOAuthProvider({
      redirectUrl: identity === "metadata document" ? "http://127.0.0.1:7655/callback" : "http://127.0.0.1:7654/callback",
      clientName: `E2E ${revision}`
    })
    // A host that uses a metadata document knows its URL as its client_id from the start.
    if (identity === "metadata document") provider.saveClientInformation({ client_id: documentUrl, issuer: server.baseUrl })

    const { client, transport, callback } = await connect({ mcpUrl, provider, revision, owner, credential: who.secret })

    // Discovery: from the 401's resource_metadata to the authorization server's metadata.
    expect(provider.discovery?.resourceMetadata?.resource).toBe(mcpUrl)
    expect(provider.discovery?.authorizationServerMetadata?.issuer).toBe(server.baseUrl)
    // Identification.
    if (identity === "metadata document") {
      expect(provider.clientInformation()?.client_id).toBe(documentUrl)
      expect(documents.hits).toContain(`/clients/${revision}.json`)
    } else {
      expect(provider.clientInformation()?.client_id).toMatch(/^mcpc_/)
    }
    // The authorization response: a code, the client's state, and the issuer (RFC 9207).
    expect(callback?.searchParams.get("code")).toMatch(/^tmac_/)
    expect(callback?.searchParams.get("state")).toBe(provider.lastState)
    expect(callback?.searchParams.get("iss")).toBe(server.baseUrl)
    expect(provider.tokens()?.scope).toBe("jobs:create jobs:read usage:read")
    expect(transport.protocolVersion).toBe(revision)

    // tools/list: eight tools, their schemas and annotations.
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual([
      "search_models",
      "get_model",
      "create_task",
      "wait_for_task",
      "get_task",
      "list_tasks",
      "cancel_task",
      "get_balance"
    ])
    for (const tool of tools) {
      expect(tool.outputSchema?.type).toBe("object")
      expect(tool.inputSchema.type).toBe("object")
      if (tool.name !== "create_task" && tool.name !== "cancel_task") expect(tool.annotations?.readOnlyHint).toBe(true)
    }
    const createTool = tools.find((tool) => tool.name === "create_task")!
    expect(createTool.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: true })
    expect(createTool.description).toContain("spends credits")
    expect(Object.keys(createTool.inputSchema.properties ?? {})).toEqual([
      "model",
      "input",
      "expectedPriceMicros",
      "idempotencyKey"
    ])

    // search_models
    const search = await call(client, "search_models", { query: "lyrics" })
    expect(search.isError).toBeFalsy()
    expect(search.data.models.map((model: any) => model.slug)).toContain("song-lyrics")
    // This server runs every model on the simulated provider, and the tools say so.
    expect(search.data.models.every((model: any) => model.provider === "simulated")).toBe(true)

    // get_model: the catalog's own JSON Schema, and an exact quote.
    const model = await call(client, "get_model", { model: IMAGE_MODEL, input: { prompt: "a lighthouse at dusk" } })
    const catalog = await Effect.runPromise(Catalog.Catalog.use((c) => c.get(IMAGE_MODEL)).pipe(Effect.provide(Catalog.layer)))
    expect(model.data.inputSchema).toEqual(catalog.jsonSchema)
    const price: number = model.data.quote.priceMicros
    expect(price).toBeGreaterThan(0)
    expect(model.data.quote.input).toEqual({ prompt: "a lighthouse at dusk", aspectRatio: "9:16" })
    expect(model.data.provider).toBe("simulated")
    expect(textOf(model)).toContain("simulated provider")

    // create_task, then the same call again: one task, one reservation.
    const args = { model: IMAGE_MODEL, input: { prompt: "a lighthouse at dusk" }, expectedPriceMicros: price }
    const created = await call(client, "create_task", args)
    expect(created.isError).toBeFalsy()
    expect(created.data).toMatchObject({ model: IMAGE_MODEL, status: "queued", priceMicros: price, replayed: false })
    expect(textOf(created)).toContain("reserved")
    const retried = await call(client, "create_task", args)
    expect(retried.data).toMatchObject({ id: created.data.id, replayed: true, idempotencyKey: created.data.idempotencyKey })
    expect(await server.balances(who.accountId)).toMatchObject({ balanceMicros: CREDITS, reservedMicros: price })

    // wait_for_task: a short wait ends with the task still running, not an error.
    const short = await call(client, "wait_for_task", { id: created.data.id, timeoutSeconds: 1 })
    expect(short.isError).toBeFalsy()
    expect(short.data.finished).toBe(false)
    expect(["queued", "submitting", "running"]).toContain(short.data.status)

    // ...and a longer one sees it finish, with progress notifications meanwhile.
    const progress: Array<{ progress: number; total?: number | undefined }> = []
    const waited = await client.callTool(
      { name: "wait_for_task", arguments: { id: created.data.id } },
      { onprogress: (update) => void progress.push(update) }
    )
    const task = waited.structuredContent as any
    expect(task).toMatchObject({ id: created.data.id, status: "succeeded", finished: true, provider: "simulated" })
    expect(textOf(waited)).toContain("simulated provider")
    expect(progress.length).toBeGreaterThan(0)
    expect(progress[0]!.total).toBe(25)
    const url = new URL(task.assets[0].url)
    expect(url.origin).toBe(server.baseUrl)
    const download = await fetch(url, { headers: { authorization: `Bearer ${who.secret}` } })
    expect(download.status).toBe(200)
    expect(download.headers.get("content-type")).toBe("image/png")
    const file = Buffer.from(await download.arrayBuffer())
    // The API link wants an API key, which a host signed in with OAuth does not hold...
    expect((await fetch(url)).status).toBe(401)
    // ...so the result also carries a signed link that opens with no credentials at all.
    const signed = new URL(task.assets[0].downloadUrl)
    expect(signed.origin).toBe(server.baseUrl)
    expect(signed.pathname).toBe(url.pathname.replace("/api/v1/results/", "/api/v1/result-links/"))
    const expiresAt = Date.parse(task.assets[0].downloadUrlExpiresAt)
    expect(expiresAt - Date.now()).toBeGreaterThan(55 * 60_000)
    expect(expiresAt - Date.now()).toBeLessThanOrEqual(60 * 60_000)
    const unauthenticated = await fetch(signed)
    expect(unauthenticated.status).toBe(200)
    expect(unauthenticated.headers.get("content-type")).toBe("image/png")
    expect(unauthenticated.headers.get("etag")).toBe(download.headers.get("etag"))
    expect(Buffer.from(await unauthenticated.arrayBuffer()).equals(file)).toBe(true)
    const ranged = await fetch(signed, { headers: { range: "bytes=0-7" } })
    expect(ranged.status).toBe(206)
    expect(Buffer.from(await ranged.arrayBuffer()).equals(file.subarray(0, 8))).toBe(true)
    expect(textOf(waited)).toContain("downloadUrl")

    // get_task, list_tasks, get_balance: charged once, for the one task; each shows a working signed link.
    const got = await call(client, "get_task", { id: created.data.id })
    expect(got.data).toMatchObject({ status: "succeeded" })
    expect((await fetch(got.data.assets[0].downloadUrl)).status).toBe(200)
    const listed = await call(client, "list_tasks", { status: "succeeded" })
    expect(listed.data.tasks.map((item: any) => item.id)).toEqual([created.data.id])
    expect((await fetch(listed.data.tasks[0].assets[0].downloadUrl)).status).toBe(200)
    const balance = await call(client, "get_balance", {})
    expect(balance.data).toEqual({
      balanceMicros: CREDITS - price,
      reservedMicros: 0,
      availableMicros: CREDITS - price,
      paymentReview: false,
      currency: "USD"
    })

    // Refusals are tool errors with the spec's codes.
    const unknown = await call(client, "get_task", { id: "task_00000000-0000-4000-8000-000000000000" })
    expect(unknown.isError).toBe(true)
    expect(unknown.data.code).toBe("JOB_NOT_FOUND")
    const invalid = await call(client, "create_task", { model: IMAGE_MODEL, input: { prompt: "x", colour: "red" } })
    expect(invalid.data.code).toBe("INVALID_MODEL_INPUT")
    const malformed = await call(client, "create_task", { model: IMAGE_MODEL, input: {}, extra: 1 })
    expect(malformed.data.code).toBe("INVALID_REQUEST")

    // Refresh: the server refuses a stale access token; the client refreshes and retries.
    const before = provider.tokens()!
    provider.saveTokens({ ...before, access_token: "tmat_no-longer-valid" })
    expect((await call(client, "get_balance", {})).isError).toBeFalsy()
    const after = provider.tokens()!
    expect(after.access_token).not.toBe(before.access_token)
    expect(after.refresh_token).not.toBe(before.refresh_token)

    // The old refresh token was rotated: presenting it again ends the whole sign-in.
    const clientId = provider.clientInformation()!.client_id
    const reuse = await RawOAuth.token(server.baseUrl, {
      grant_type: "refresh_token",
      refresh_token: before.refresh_token!,
      client_id: clientId
    })
    expect(reuse.status).toBe(400)
    expect(reuse.body.error).toBe("invalid_grant")
    expect((await RawOAuth.mcpCall(server.baseUrl, after.access_token)).status).toBe(401)
    await client.close()
  })
})

describe("accounts", () => {
  it("a token of one account never sees another account's tasks", async () => {
    const alice = await server.customer(CREDITS)
    const bob = await server.customer(CREDITS)
    const mcpUrl = `${server.baseUrl}/mcp`
    const aliceSide = await connect({
      mcpUrl,
      provider: new MemoryOAuthProvider({ redirectUrl: "http://127.0.0.1:7656/callback", clientName: "Alice's host" }),
      revision: "2026-07-28",
      owner,
      credential: alice.secret
    })
    const bobSide = await connect({
      mcpUrl,
      provider: new MemoryOAuthProvider({ redirectUrl: "http://127.0.0.1:7657/callback", clientName: "Bob's host" }),
      revision: "2026-07-28",
      owner,
      credential: bob.secret
    })
    const created = await call(aliceSide.client, "create_task", { model: "song-lyrics", input: { prompt: "a quiet harbour" } })
    expect(created.isError).toBeFalsy()
    const id = created.data.id

    for (const name of ["get_task", "wait_for_task"]) {
      const peeked = await call(bobSide.client, name, { id, ...(name === "wait_for_task" ? { timeoutSeconds: 1 } : {}) })
      expect(peeked.isError).toBe(true)
      expect(peeked.data.code).toBe("JOB_NOT_FOUND")
    }
    expect((await call(bobSide.client, "list_tasks", {})).data.tasks).toEqual([])
    expect((await call(aliceSide.client, "list_tasks", {})).data.tasks.map((task: any) => task.id)).toEqual([id])
    // The same arguments from Bob make Bob's own task: idempotency keys are per account.
    const bobs = await call(bobSide.client, "create_task", { model: "song-lyrics", input: { prompt: "a quiet harbour" } })
    expect(bobs.data.replayed).toBe(false)
    expect(bobs.data.id).not.toBe(id)
    await aliceSide.client.close()
    await bobSide.client.close()
  })

  it("the owner can deny: the client gets access_denied and no code", async () => {
    const who = await server.customer(CREDITS)
    const registered = await RawOAuth.register(server.baseUrl, { redirect_uris: ["http://127.0.0.1:7658/callback"] })
    const { challenge } = RawOAuth.pkce()
    const query = new URLSearchParams({
      response_type: "code",
      client_id: registered.body.client_id,
      redirect_uri: "http://127.0.0.1:7658/callback",
      code_challenge: challenge,
      code_challenge_method: "S256",
      state: "deny-me"
    })
    const landed = await owner.signIn(`${server.baseUrl}/authorize?${query}`, who.secret, { deny: true })
    expect(landed.searchParams.get("error")).toBe("access_denied")
    expect(landed.searchParams.get("state")).toBe("deny-me")
    expect(landed.searchParams.get("iss")).toBe(server.baseUrl)
    expect(landed.searchParams.has("code")).toBe(false)
  })
})
