/**
 * Result downloads for a host signed in with OAuth, over plain HTTP (no browser): the tools'
 * file results carry a signed `downloadUrl` that opens with no credentials, while the API's
 * `url` takes an API key, which such a host does not hold (its OAuth token does not open it).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as RawOAuth from "./support/RawOAuth.ts"
import * as TestServer from "./support/TestServer.ts"

const IMAGE_MODEL = "alpha-2-lite-text-to-image-economy"

let server: TestServer.TestServer
let base: string

beforeAll(async () => {
  server = await TestServer.make({ simulatedDelayMs: 0 })
  base = server.baseUrl
})

afterAll(async () => {
  await server?.close()
})

/** A host signed in with OAuth: its access token and nothing else. */
const host = async () => {
  const who = await server.customer()
  const clientId = (await RawOAuth.register(base)).body.client_id as string
  const { tokens } = await RawOAuth.signIn(base, { clientId, credential: who.secret })
  let id = 0
  const callTool = async (name: string, args: Record<string, unknown>) => {
    const reply = await RawOAuth.mcpCall(
      base,
      tokens.access_token,
      { jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name, arguments: args } },
      { "mcp-protocol-version": "2025-11-25" }
    )
    expect(reply.status).toBe(200)
    return RawOAuth.rpcResult(reply.text).result
  }
  return { who, accessToken: tokens.access_token, callTool }
}

/** Runs an image task to completion and returns the task as wait_for_task shows it. */
const finishedImageTask = async (signedIn: Awaited<ReturnType<typeof host>>) => {
  const created = await signedIn.callTool("create_task", { model: IMAGE_MODEL, input: { prompt: "a lighthouse at dusk" } })
  expect(created.isError).toBeFalsy()
  const waited = await signedIn.callTool("wait_for_task", { id: created.structuredContent.id, timeoutSeconds: 20 })
  expect(waited.structuredContent).toMatchObject({ status: "succeeded", finished: true })
  return waited
}

describe("result links in tool results", () => {
  it("a file result's downloadUrl downloads with no credentials, where url wants an API key", async () => {
    const signedIn = await host()
    const waited = await finishedImageTask(signedIn)
    const [asset] = waited.structuredContent.assets
    expect(asset.url).toMatch(new RegExp(`^${base}/api/v1/results/[0-9a-f-]{36}$`))
    // Neither no credentials nor the host's OAuth token opens the API link.
    expect((await fetch(asset.url)).status).toBe(401)
    expect((await fetch(asset.url, { headers: { authorization: `Bearer ${signedIn.accessToken}` } })).status).toBe(401)
    const viaKey = await fetch(asset.url, { headers: { authorization: `Bearer ${signedIn.who.secret}` } })
    const file = Buffer.from(await viaKey.arrayBuffer())

    expect(asset.downloadUrl.startsWith(`${base}/api/v1/result-links/${asset.url.split("/").at(-1)}?`)).toBe(true)
    expect(Date.parse(asset.downloadUrlExpiresAt) - Date.now()).toBeGreaterThan(59 * 60_000)
    const download = await fetch(asset.downloadUrl)
    expect(download.status).toBe(200)
    expect(download.headers.get("content-type")).toBe("image/png")
    expect(download.headers.get("content-length")).toBe(String(file.length))
    expect(download.headers.get("etag")).toBe(viaKey.headers.get("etag"))
    expect(Buffer.from(await download.arrayBuffer()).equals(file)).toBe(true)
    const ranged = await fetch(asset.downloadUrl, { headers: { range: "bytes=1-4" } })
    expect(ranged.status).toBe(206)
    expect(ranged.headers.get("content-range")).toBe(`bytes 1-4/${file.length}`)
    expect(Buffer.from(await ranged.arrayBuffer()).equals(file.subarray(1, 5))).toBe(true)
    expect(waited.content[0].text).toContain("downloadUrl")
  })

  it("a link altered to another account's result, or to another account, opens nothing", async () => {
    const alice = await host()
    const bob = await host()
    const alices = (await finishedImageTask(alice)).structuredContent.assets[0]
    const bobs = (await finishedImageTask(bob)).structuredContent.assets[0]
    const aliceUuid = alices.url.split("/").at(-1)
    const bobUuid = bobs.url.split("/").at(-1)
    const toBobsResult = bobs.downloadUrl.replace(bobUuid, aliceUuid)
    const asBob = new URL(alices.downloadUrl)
    asBob.searchParams.set("acct", bob.who.accountId)
    for (const link of [toBobsResult, asBob.href]) {
      const refused = await fetch(link)
      expect(refused.status).toBe(404)
      expect(((await refused.json()) as { code: string }).code).toBe("JOB_NOT_FOUND")
    }
    expect((await fetch(alices.downloadUrl)).status).toBe(200)
  })

  it("every call showing the task signs a fresh link, and tools/list describes the field", async () => {
    const signedIn = await host()
    const waited = await finishedImageTask(signedIn)
    const id = waited.structuredContent.id
    const got = await signedIn.callTool("get_task", { id })
    const listed = await signedIn.callTool("list_tasks", {})
    for (const task of [got.structuredContent, listed.structuredContent.tasks[0]]) {
      expect(task.id).toBe(id)
      expect((await fetch(task.assets[0].downloadUrl)).status).toBe(200)
    }
    const list = await RawOAuth.mcpCall(
      base,
      signedIn.accessToken,
      { jsonrpc: "2.0", id: 99, method: "tools/list", params: {} },
      { "mcp-protocol-version": "2025-11-25" }
    )
    const tools: Array<any> = RawOAuth.rpcResult(list.text).result.tools
    const getTask = tools.find((tool) => tool.name === "get_task")
    const asset = getTask.outputSchema.properties.assets.items
    const assetSchema = asset.$ref === undefined ? asset : getTask.outputSchema.$defs[asset.$ref.split("/").at(-1)]
    expect(assetSchema.properties.downloadUrl.description).toContain("needs no credentials")
    expect(assetSchema.properties.downloadUrlExpiresAt.type).toBe("string")
  })
})
