/**
 * cancel_task through a host signed in with OAuth, against the simulated provider and a running
 * worker: a running task is canceled at the provider and ends failed CANCELED with its credits
 * released; a repeat answers the same; a finished task is refused with TASK_NOT_CANCELABLE.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as RawOAuth from "./support/RawOAuth.ts"
import * as TestServer from "./support/TestServer.ts"

const IMAGE_MODEL = "alpha-2-lite-text-to-image-economy"

let server: TestServer.TestServer

beforeAll(async () => {
  // Long enough that a task is still running when it is canceled.
  server = await TestServer.make({ simulatedDelayMs: 60_000 })
})

afterAll(async () => {
  await server?.close()
})

const host = async () => {
  const who = await server.customer()
  const clientId = (await RawOAuth.register(server.baseUrl)).body.client_id as string
  const { tokens } = await RawOAuth.signIn(server.baseUrl, { clientId, credential: who.secret })
  let id = 0
  const callTool = async (name: string, args: Record<string, unknown>) => {
    const reply = await RawOAuth.mcpCall(
      server.baseUrl,
      tokens.access_token,
      { jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name, arguments: args } },
      { "mcp-protocol-version": "2025-11-25" }
    )
    expect(reply.status).toBe(200)
    return RawOAuth.rpcResult(reply.text).result
  }
  return { who, callTool }
}

describe("cancel_task", () => {
  it("cancels a running task at the provider: failed CANCELED, nothing charged; a repeat answers the same", async () => {
    const { who, callTool } = await host()
    const created = await callTool("create_task", { model: IMAGE_MODEL, input: { prompt: "a lighthouse at dusk" } })
    const id = created.structuredContent.id
    const started = Date.now()
    while ((await callTool("get_task", { id })).structuredContent.status !== "running") {
      expect(Date.now() - started).toBeLessThan(10_000)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const canceled = await callTool("cancel_task", { id })
    expect(canceled.isError).toBeFalsy()
    expect(canceled.structuredContent).toMatchObject({ id, status: "running", pending: true })
    expect(canceled.content[0].text).toContain("wait_for_task")
    const waited = await callTool("wait_for_task", { id, timeoutSeconds: 10 })
    expect(waited.structuredContent).toMatchObject({ status: "failed", errorCode: "CANCELED", finished: true })
    expect(await server.balances(who.accountId)).toMatchObject({ balanceMicros: 10_000_000, reservedMicros: 0 })
    const again = await callTool("cancel_task", { id })
    expect(again.structuredContent).toMatchObject({ id, status: "failed", errorCode: "CANCELED", pending: false })
  })

  it("refuses a task of another account (JOB_NOT_FOUND)", async () => {
    const alice = await host()
    const bob = await host()
    const created = await alice.callTool("create_task", { model: IMAGE_MODEL, input: { prompt: "a quiet harbour" } })
    const refused = await bob.callTool("cancel_task", { id: created.structuredContent.id })
    expect(refused.isError).toBe(true)
    expect(refused.structuredContent.code).toBe("JOB_NOT_FOUND")
    expect((await alice.callTool("get_task", { id: created.structuredContent.id })).structuredContent.status).not.toBe("failed")
  })
})
