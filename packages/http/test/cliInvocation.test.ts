/**
 * The command line's reading of itself: `--json` wherever it is placed, and a usage error's cause
 * before the help. Each CLI run is a fresh Node process with no server to find.
 */
import { execFile } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import * as CliInvocation from "../src/admin/CliInvocation.ts"
import * as Dependencies from "../../../test/Dependencies.ts"

const BIN = fileURLToPath(new URL("../bin/taskmeter.ts", import.meta.url))
const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-cli-invocation-"))

const run = (args: ReadonlyArray<string>) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...Dependencies.childEnv, DATA_DIR: dataDir }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr })
    )
  })

describe("CliInvocation.normalize", () => {
  it("moves --json after the command path, wherever it was", () => {
    expect(CliInvocation.normalize(["--json", "admin", "account", "list"])).toEqual(["admin", "account", "list", "--json"])
    expect(CliInvocation.normalize(["admin", "--json", "account", "show", "--account", "a"])).toEqual([
      "admin",
      "account",
      "show",
      "--account",
      "a",
      "--json"
    ])
  })

  it("leaves arguments without --json, and anything after --, as they are", () => {
    expect(CliInvocation.normalize(["admin", "account", "list"])).toEqual(["admin", "account", "list"])
    expect(CliInvocation.normalize(["--json", "admin", "--", "--json"])).toEqual(["admin", "--json", "--", "--json"])
  })
})

describe("taskmeter", { timeout: 120_000 }, () => {
  it("takes --json before the command: the failure is reported as JSON", async () => {
    const result = await run(["--json", "admin", "account", "list"])
    expect(result.code).toBe(1)
    expect(JSON.parse(result.stderr).error.reason).toBe("NoServer")
  })

  it("prints a usage error's cause on the first line, then the help", async () => {
    const result = await run(["admin", "account", "show"])
    expect(result.code).toBe(1)
    const lines = result.stderr.split("\n")
    expect(lines[0]).toBe("error: Missing required flag: --account")
    expect(result.stderr).toContain("taskmeter admin account show [flags]")
    expect(result.stdout).toBe("")
  })
})
