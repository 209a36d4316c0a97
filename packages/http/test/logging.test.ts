/**
 * The default log sink, stdout, in a process of its own (a pipe, as a log collector reads it):
 * the lines of one turn and other stdout output between them come out in the order written, in
 * one write, and none is lost when the process exits in that turn or a later one.
 */
import { execFile } from "node:child_process"
import { pathToFileURL } from "node:url"
import { describe, expect, it } from "vitest"

const LOGGING = pathToFileURL(new URL("../src/observability/Logging.ts", import.meta.url).pathname).href

/** Runs `body` as an ES module with Effect and Logging (LOG_FORMAT=json) imported; its stdout and its write count. */
const run = (body: string): Promise<{ lines: Array<string>; writes: number }> => {
  const script = `
    import { Effect } from "effect"
    import * as Logging from ${JSON.stringify(LOGGING)}
    let writes = 0
    const writev = process.stdout._writev.bind(process.stdout)
    const write = process.stdout._write.bind(process.stdout)
    process.stdout._writev = (chunks, callback) => { writes++; writev(chunks, callback) }
    process.stdout._write = (chunk, encoding, callback) => { writes++; write(chunk, encoding, callback) }
    process.on("exit", () => process.stderr.write(String(writes)))
    const log = (message) => Effect.runSync(Effect.provide(Effect.log(message), Logging.layer({ format: "json" })))
    ${body}
  `
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      ["--input-type=module", "-e", script],
      { cwd: new URL("..", import.meta.url).pathname },
      (error, stdout, stderr) =>
        error === null
          ? resolve({
              lines: stdout
                .trimEnd()
                .split("\n")
                .map((line) => (line.startsWith("{") ? (JSON.parse(line) as { message: string }).message : line)),
              writes: Number(stderr)
            })
          : reject(error)
    )
  )
}

describe("Logging to stdout", () => {
  it("writes the lines of one turn, and what else went to stdout between them, in order in one write", async () => {
    const { lines, writes } = await run(`log("one"); console.log("plain"); log("two"); log("three")`)
    expect(lines).toEqual(["one", "plain", "two", "three"])
    expect(writes).toBe(1)
  })

  it("writes the lines of later turns too, and those of a turn the process exits in", async () => {
    const { lines } = await run(`
      log("first turn")
      setTimeout(() => {
        log("second turn")
        setTimeout(() => { log("last words"); process.exit(0) }, 5)
      }, 5)
    `)
    expect(lines).toEqual(["first turn", "second turn", "last words"])
  })
})
