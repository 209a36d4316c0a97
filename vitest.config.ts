import type { Reporter } from "vitest/node"
import { configDefaults, defineConfig } from "vitest/config"
import * as Dependencies from "./test/Dependencies.ts"

// PostgreSQL, Chromium and ffmpeg, detected once: without one, its suites are left out and named
// at the end with the command that enables them; under CI a missing one fails the run instead.
const missing = await Dependencies.detect()
if (missing.length > 0 && process.env["CI"]) throw new Error(Dependencies.notRunReport(missing, true))

// Inherited by the workers and every Node process the tests start.
process.env["NODE_COMPILE_CACHE"] = Dependencies.compileCache

const notRun: Reporter = {
  onTestRunEnd: () => {
    if (missing.length > 0) process.stdout.write(`${Dependencies.notRunReport(missing, false)}\n`)
  }
}

// Files that change no global state (no msw, no mocks, no environment): one module graph per
// worker serves them all, where a fresh one per file spent most of their time importing.
const sharedModules = [
  "packages/kernel/test/**/*.test.ts",
  "packages/storage-memory/test/*.test.ts",
  "packages/http/test/{ByteRange,ErrorResponse,MediaKind,ServerConfig}.test.ts"
]
// Effect's default logger in the servers tests start in-process prints each access line and
// "Listening on"; at INFO they only bury the report. Warnings and errors still print.
const INFO_LINE = /^\[\d\d:\d\d:\d\d\.\d{3}\] (INFO|DEBUG|TRACE) \(#\d+\):/

const excluded = [...configDefaults.exclude, ...Dependencies.excludedFiles(missing)]

export default defineConfig({
  test: {
    projects: [
      { extends: true, test: { name: "shared modules", include: sharedModules, exclude: excluded, isolate: false } },
      {
        extends: true,
        test: {
          name: "isolated",
          include: ["packages/*/test/**/*.test.ts", "examples/**/*.test.ts"],
          exclude: [...excluded, ...sharedModules]
        }
      }
    ],
    env: { TASKMETER_TEST_MISSING: Dependencies.encode(missing) },
    reporters: ["default", notRun],
    onConsoleLog: (log) => !INFO_LINE.test(log),
    // vitest's default is one worker fewer than the cores: one worker on these 2-core machines.
    // The suites wait on PostgreSQL and child processes as much as they compute, so three overlap.
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
