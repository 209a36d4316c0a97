/**
 * DATA_DIR is private: `prepare` makes a new one 0700 and takes group and other permissions off
 * an existing tree (not through symbolic links, within a bound); and `taskmeter start` on the
 * embedded PGlite leaves nothing under it that another user could read (umask 077).
 */
import { spawn } from "node:child_process"
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { describe, expect, it } from "@effect/vitest"
import * as DataDir from "../src/DataDir.ts"
import * as Dependencies from "../../../test/Dependencies.ts"

const BIN = fileURLToPath(new URL("../bin/taskmeter.ts", import.meta.url))

const modeOf = (path: string): number => lstatSync(path).mode & 0o777

/** Every file and directory under `root` (itself included) with its mode, symbolic links left out. */
const tree = (root: string): Array<[string, number]> => {
  const entries: Array<[string, number]> = [[root, modeOf(root)]]
  for (const name of readdirSync(root, { recursive: true }) as Array<string>) {
    const path = join(root, name)
    if (!lstatSync(path).isSymbolicLink()) entries.push([path, modeOf(path)])
  }
  return entries
}

/** A tree as earlier releases left it: everything readable and writable by everyone. */
const openTree = () => {
  const root = mkdtempSync(join(tmpdir(), "taskmeter-datadir-"))
  const dataDir = join(root, "data")
  mkdirSync(join(dataDir, "pg", "base"), { recursive: true })
  writeFileSync(join(dataDir, "admin.json"), "{}")
  writeFileSync(join(dataDir, "pg", "base", "1249"), "x")
  const outside = join(root, "outside.txt")
  writeFileSync(outside, "not ours to change")
  symlinkSync(outside, join(dataDir, "link"))
  for (const dir of [dataDir, join(dataDir, "pg"), join(dataDir, "pg", "base")]) chmodSync(dir, 0o777)
  for (const file of [join(dataDir, "admin.json"), join(dataDir, "pg", "base", "1249"), outside]) chmodSync(file, 0o666)
  return { dataDir, outside }
}

describe("DataDir.prepare", () => {
  it.effect("creates a missing DATA_DIR with mode 0700", () =>
    Effect.gen(function* () {
      const dataDir = join(mkdtempSync(join(tmpdir(), "taskmeter-datadir-")), "data")
      const prepared = yield* DataDir.prepare(dataDir)
      expect(modeOf(dataDir)).toBe(0o700)
      expect(prepared.truncated).toBe(false)
    })
  )

  it.effect("makes an existing 0777/0666 tree owner-only (0700/0600), not what a symbolic link points to", () =>
    Effect.gen(function* () {
      const { dataDir, outside } = openTree()
      const prepared = yield* DataDir.prepare(dataDir)
      expect(prepared).toEqual({ fixed: 5, unchanged: [], truncated: false })
      expect(tree(dataDir)).toEqual([
        [dataDir, 0o700],
        ...tree(dataDir)
          .slice(1)
          .map(([path]) => [path, lstatSync(path).isDirectory() ? 0o700 : 0o600] as [string, number])
      ])
      expect(tree(dataDir)).toHaveLength(5)
      expect(modeOf(outside)).toBe(0o666)
      expect((yield* DataDir.prepare(dataDir)).fixed).toBe(0)
    })
  )

  it.effect("stops after the bound, saying so", () =>
    Effect.gen(function* () {
      const { dataDir } = openTree()
      const prepared = yield* DataDir.prepare(dataDir, { maxEntries: 2 })
      expect(prepared.truncated).toBe(true)
      expect(prepared.fixed).toBeLessThanOrEqual(2)
    })
  )
})

describe("taskmeter start on the embedded database", () => {
  it("leaves no file or directory under DATA_DIR that group or others can read, and fixes an open one", async () => {
    // Open as earlier releases left it (a fake database would not start: only blobs here).
    const dataDir = join(mkdtempSync(join(tmpdir(), "taskmeter-datadir-")), "data")
    mkdirSync(join(dataDir, "blobs", "media"), { recursive: true })
    writeFileSync(join(dataDir, "blobs", "media", "upload"), "bytes")
    for (const dir of [dataDir, join(dataDir, "blobs"), join(dataDir, "blobs", "media")]) chmodSync(dir, 0o777)
    chmodSync(join(dataDir, "blobs", "media", "upload"), 0o666)
    const child = spawn(process.execPath, [BIN, "start"], {
      env: { ...Dependencies.childEnv, DATA_DIR: dataDir, PORT: "0", ADMIN_PORT: "0", WORKERS: "false" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    try {
      await new Promise<void>((resolve, reject) => {
        let output = ""
        const onData = (chunk: Buffer) => {
          output += chunk.toString()
          if (output.includes("taskmeter is listening on")) resolve()
        }
        child.stdout.on("data", onData)
        child.stderr.on("data", onData)
        child.once("exit", (code) => reject(new Error(`taskmeter start exited ${code}:\n${output}`)))
      })
      const entries = tree(dataDir)
      expect(entries.filter(([path]) => path.includes(`${join(dataDir, "pg")}/`)).length).toBeGreaterThan(100)
      expect(entries.some(([path]) => path.endsWith("admin.json"))).toBe(true)
      expect(entries.some(([path]) => path.endsWith("upload"))).toBe(true)
      expect(entries.filter(([, mode]) => (mode & 0o077) !== 0)).toEqual([])
    } finally {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve))
        child.kill("SIGTERM")
        await exited
      }
    }
  }, 120_000)
})
