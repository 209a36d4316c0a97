/**
 * Log lines reach stdout in batches: the lines of BATCH_MS in one write, at once past BATCH_CHARS,
 * before the banner (flush), and at exit, so that a process ending right after a line keeps it.
 */
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest"
import * as Logging from "../src/observability/Logging.ts"
import * as Dependencies from "../../../test/Dependencies.ts"

const LOGGING = fileURLToPath(new URL("../src/observability/Logging.ts", import.meta.url))

describe("Logging.stdoutBatched", () => {
  let written: Array<string>

  beforeEach(() => {
    written = []
    vi.useFakeTimers()
    vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk))
      return true
    })
  })

  afterEach(() => {
    Logging.flush()
    vi.useRealTimers()
    vi.restoreAllMocks()
  })

  it("writes the lines of BATCH_MS in one write, no earlier", () => {
    Logging.stdoutBatched("first")
    Logging.stdoutBatched("second")
    vi.advanceTimersByTime(Logging.BATCH_MS - 1)
    expect(written).toEqual([])
    vi.advanceTimersByTime(1)
    expect(written).toEqual(["first\nsecond\n"])
    Logging.stdoutBatched("third")
    vi.advanceTimersByTime(Logging.BATCH_MS)
    expect(written).toEqual(["first\nsecond\n", "third\n"])
  })

  it("writes at once when BATCH_CHARS have gathered, and leaves no timer behind", () => {
    const long = "x".repeat(Logging.BATCH_CHARS)
    Logging.stdoutBatched("short")
    Logging.stdoutBatched(long)
    expect(written).toEqual([`short\n${long}\n`])
    vi.advanceTimersByTime(Logging.BATCH_MS * 2)
    expect(written).toHaveLength(1)
  })

  it("flush writes what is pending at once, and only once", () => {
    Logging.stdoutBatched("before the banner")
    Logging.flush()
    expect(written).toEqual(["before the banner\n"])
    vi.advanceTimersByTime(Logging.BATCH_MS * 2)
    Logging.flush()
    expect(written).toHaveLength(1)
  })
})

describe("the default logger at exit", () => {
  it("writes the lines a process logged just before it exited", async () => {
    const script = `
      import { Effect } from "effect"
      import * as Logging from ${JSON.stringify(LOGGING)}
      await Effect.runPromise(Effect.provide(Effect.log("the last words"), Logging.layer({ format: "json" })))
      process.exit(0)
    `
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ["--input-type=module", "-e", script],
        { cwd: fileURLToPath(new URL("..", import.meta.url)), env: Dependencies.childEnv, timeout: 30_000 },
        (error, out) => (error === null ? resolve(out) : reject(error))
      )
    )
    const lines = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { message: string })
    expect(lines.map((line) => line.message)).toEqual(["the last words"])
  })
})
