/**
 * The harness of the CLI suites: the composed server (storage-memory, in-process workers on the
 * simulated provider) on ephemeral ports, and `taskmeter admin` run as a child process against it.
 */
import { execFile } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { expect } from "@effect/vitest"
import { OAuthStore } from "@taskmeter/mcp"
import { Simulated } from "@taskmeter/providers"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import * as Main from "../src/main.ts"
import * as ServerConfig from "../src/ServerConfig.ts"
import * as Dependencies from "../../../test/Dependencies.ts"

const BIN = fileURLToPath(new URL("../bin/taskmeter.ts", import.meta.url))
export const USD = 1_000_000
export const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-cli-"))
export const token = OperatorToken.generate()
/** Served by the workers; HELD_MODEL is not, so tasks held for the resolve test stay put. */
export const SERVED_MODEL = "song-lyrics"
export const HELD_MODEL = "song-single-v5"

export const TestServer = Main.server({
  settings: Main.defaults,
  adapters: [Simulated.make({ models: [SERVED_MODEL] })],
  pricesFile: Main.pricesFileOf(dataDir),
  token,
  dataDir
}).pipe(
  Layer.provideMerge(Layer.merge(MemoryStore.layer, OAuthStore.layerMemory)),
  Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir, adminPort: 0 }))
)

/** The admin listener's address, which the CLI calls. */
export const baseUrl = Main.adminUrl

export interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs the CLI with `args`, an empty environment but PATH (and the compile cache), and no admin file unless told. */
export const run = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.callback<Run>((resume) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...Dependencies.childEnv, DATA_DIR: join(dataDir, "elsewhere"), ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resume(Effect.succeed({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
    )
  })

/** `taskmeter admin --url <admin listener> --json ...args` with TASKMETER_ADMIN_TOKEN, which must succeed; its JSON. */
export const admin = (...args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const url = yield* baseUrl
    const result = yield* run(["admin", "--url", url, "--json", ...args], { TASKMETER_ADMIN_TOKEN: Redacted.value(token) })
    expect(result.stderr, `taskmeter admin ${args.join(" ")}`).toBe("")
    expect(result.code).toBe(0)
    return JSON.parse(result.stdout) as any
  })

/** The same, expected to fail: the error of its JSON report. */
export const adminFails = (...args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const url = yield* baseUrl
    const result = yield* run(["admin", "--url", url, "--json", ...args], { TASKMETER_ADMIN_TOKEN: Redacted.value(token) })
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    return (JSON.parse(result.stderr) as { error: { reason: string; message: string } }).error
  })

/** The public API's address. */
export const apiUrl = Effect.map(HttpServer.HttpServer, (server) => HttpServer.formatAddress(server.address))

export const api = (path: string, key: string, init: RequestInit = {}) =>
  Effect.flatMap(apiUrl, (url) =>
    Effect.promise(async () => {
      const response = await fetch(`${url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers }
      })
      return { status: response.status, body: (await response.json()) as any }
    })
  )
