/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, its `server`
 * command) against /mcp: the initialize, ping, tools-list and dns-rebinding-protection
 * scenarios. The suite cannot sign in, so it talks to a local proxy that adds an API key as
 * the Bearer token and forwards Host and Origin unchanged; the proxy's origin is what the
 * suite's browser-like requests carry, so the server allows it (allowedOrigins, as an operator
 * would with MCP_ALLOWED_ORIGINS), while `Origin: http://evil.example.com` is refused.
 */
import { execFile } from "node:child_process"
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as TestServer from "./support/TestServer.ts"
import * as TokenProxy from "./support/TokenProxy.ts"

const run = promisify(execFile)
const cli = join(
  dirname(createRequire(import.meta.url).resolve("@modelcontextprotocol/conformance/package.json")),
  "dist/index.js"
)

let server: TestServer.TestServer
let proxy: TokenProxy.TokenProxy
let output: string

beforeAll(async () => {
  proxy = await TokenProxy.start()
  server = await TestServer.make({ allowedOrigins: [proxy.url] })
  proxy.forwardTo(server.baseUrl, (await server.customer()).secret)
  output = await mkdtemp(join(tmpdir(), "taskmeter-mcp-conformance-"))
})

afterAll(async () => {
  await proxy?.close()
  await server?.close()
  if (output !== undefined) await rm(output, { recursive: true, force: true })
})

interface Check {
  readonly id: string
  readonly status: string
  readonly errorMessage?: string
}

/** Runs one scenario (asynchronously: the server under test answers in this process) and returns its checks. */
const scenario = async (name: string) => {
  const directory = join(output, name)
  const outcome = await run(process.execPath, [cli, "server", "--url", `${proxy.url}/mcp`, "--scenario", name, "-o", directory], {
    encoding: "utf8"
  }).then(
    () => 0,
    (error: { code?: number; stdout?: string }) => ({ code: error.code, stdout: error.stdout })
  )
  const [results] = await readdir(directory)
  const checks = JSON.parse(await readFile(join(directory, results!, "checks.json"), "utf8")) as ReadonlyArray<Check>
  return { outcome, checks }
}

describe("the MCP conformance suite's server scenarios", () => {
  for (const name of ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]) {
    it(`passes ${name}`, { timeout: 60_000 }, async () => {
      const { outcome, checks } = await scenario(name)
      expect(checks.length).toBeGreaterThan(0)
      expect(checks.filter((check) => check.status !== "SUCCESS" && check.status !== "INFO")).toEqual([])
      expect(outcome).toBe(0)
    })
  }
})
