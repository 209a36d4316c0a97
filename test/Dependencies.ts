/**
 * What the suites need from the machine besides npm's packages (PostgreSQL, Chromium, ffmpeg),
 * detected in one place. vitest.config.ts detects them once per run; a suite that needs a missing
 * one is left out and named at the end with the command that enables it, or, under CI=true, the
 * run fails. Workers read the outcome from TASKMETER_TEST_MISSING through `isMissing`.
 */
import { accessSync, constants } from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { delimiter, join } from "node:path"

export type Dependency = "postgres" | "chromium" | "ffmpeg"

/**
 * Node's compile cache for the Node processes the tests start (the CLI, workers, examples): one
 * that finds its modules compiled starts about 40% sooner. Set for the whole run in vitest.config.ts.
 */
export const compileCache = process.env["NODE_COMPILE_CACHE"] ?? join(tmpdir(), "taskmeter-node-compile-cache")

/** The environment of a Node process a test starts with nothing else: PATH and the compile cache. */
export const childEnv: Readonly<Record<string, string>> = { PATH: process.env["PATH"] ?? "", NODE_COMPILE_CACHE: compileCache }

export const databaseUrl = process.env["TEST_DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

const executable = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** The first `name` on PATH, if any. */
const onPath = (name: string): string | undefined =>
  (process.env["PATH"] ?? "")
    .split(delimiter)
    .filter((dir) => dir !== "")
    .map((dir) => join(dir, name))
    .find(executable)

/** The Chromium the browser tests drive: CHROMIUM_PATH, else `chromium` on PATH. */
export const chromiumPath: string = process.env["CHROMIUM_PATH"] ?? onPath("chromium") ?? "/usr/bin/chromium"

const answers = (url: string): Promise<boolean> =>
  new Promise((resolve) => {
    const { hostname, port } = new URL(url)
    const socket = connect({ host: hostname, port: Number(port || 5432) })
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(1000, () => done(false))
    socket.once("connect", () => done(true))
    socket.once("error", () => done(false))
  })

export interface Requirement {
  readonly name: string
  /** The one command (or setting) that provides it. */
  readonly enable: string
  /** Why it counts as missing here, or undefined when it is available. */
  readonly detect: () => Promise<string | undefined>
  /** The suites that cannot run without it: a file, or the part of a file named after it. */
  readonly suites: ReadonlyArray<string>
}

export const requirements: Record<Dependency, Requirement> = {
  postgres: {
    name: "PostgreSQL",
    enable: "apt-get install postgresql && createdb -U postgres test (or set TEST_DATABASE_URL)",
    detect: async () => ((await answers(databaseUrl)) ? undefined : `no PostgreSQL answers at ${new URL(databaseUrl).host}`),
    suites: [
      "examples/postgres/postgres.test.ts",
      "packages/http/test/billing.test.ts",
      "packages/http/test/callbackRecovery.postgres.test.ts",
      "packages/http/test/cli-postgres.test.ts",
      "packages/http/test/chat/leases-postgres.test.ts",
      "packages/http/test/hostile/corpus.postgres.test.ts",
      "packages/http/test/jobsEvents.postgres.test.ts",
      "packages/http/test/hostile/properties.test.ts: its storage-pg (PostgreSQL) property",
      "packages/http/test/mcpMount.test.ts: its PostgreSQL cases",
      "packages/http/test/observability.test.ts",
      "packages/http/test/s3-postgres.test.ts",
      "packages/http/test/upstreamLimits.postgres.test.ts",
      "packages/http/test/providerCallbacks.postgres.test.ts",
      "packages/http/test/tracing.test.ts",
      "packages/http/test/workerProcess.postgres.test.ts",
      "packages/kernel/test/tasks/TaskWorkerProcesses.test.ts",
      "packages/kernel/test/webhooks/WebhookDeliveryProcesses.test.ts",
      "packages/mcp/test/OAuthStorePg.concurrentStart.test.ts",
      "packages/mcp/test/OAuthStorePg.migrations.test.ts",
      "packages/mcp/test/OAuthStorePg.test.ts",
      "packages/mcp/test/unstorableText.test.ts",
      "packages/payments-stripe/test/webhooks.postgres.test.ts",
      "packages/storage-pg/test/admissionFastPath.test.ts",
      "packages/storage-pg/test/chatConformance.postgres.test.ts",
      "packages/storage-pg/test/chatPriceLists.test.ts",
      "packages/storage-pg/test/concurrency.test.ts",
      "packages/storage-pg/test/conformance.postgres.test.ts",
      "packages/storage-pg/test/constraints.test.ts",
      "packages/storage-pg/test/idempotencyPurge.test.ts",
      "packages/storage-pg/test/boundedSweeps.test.ts",
      "packages/storage-pg/test/genericPlans.test.ts",
      "packages/storage-pg/test/keyedAdmission.test.ts",
      "packages/storage-pg/test/migrations.test.ts",
      "packages/storage-pg/test/paymentConformance.postgres.test.ts",
      "packages/storage-pg/test/poisonedBatch.test.ts",
      "packages/storage-pg/test/priceLists.test.ts",
      "packages/storage-pg/test/signInThrottle.postgres.test.ts",
      "packages/storage-pg/test/webhookLog.test.ts",
      "packages/storage-pg/test/userConformance.postgres.test.ts",
      "packages/storage-pg/test/webhookConformance.postgres.test.ts"
    ]
  },
  chromium: {
    name: "Chromium",
    enable: "apt-get install chromium (or set CHROMIUM_PATH)",
    detect: async () => (executable(chromiumPath) ? undefined : `no Chromium at ${chromiumPath}`),
    suites: [
      "packages/console/test/journey.test.ts",
      "packages/console/test/topUp.test.ts",
      "packages/http/test/apiReference.test.ts",
      "packages/http/test/jobsEvents.browser.test.ts",
      "packages/http/test/passkeys.test.ts",
      "packages/mcp/test/endToEnd.test.ts"
    ]
  },
  ffmpeg: {
    name: "ffmpeg",
    enable: "apt-get install ffmpeg",
    detect: async () =>
      onPath("ffprobe") !== undefined && onPath("ffmpeg") !== undefined ? undefined : "no ffmpeg and ffprobe on PATH",
    suites: ["packages/providers/test/simulated.test.ts: its decode check"]
  }
}

export interface Missing {
  readonly dependency: Dependency
  readonly reason: string
}

/** The dependencies this machine lacks, with why. */
export const detect = async (): Promise<ReadonlyArray<Missing>> => {
  const found = await Promise.all(
    Object.entries(requirements).map(async ([dependency, requirement]) => {
      const reason = await requirement.detect()
      return reason === undefined ? [] : [{ dependency: dependency as Dependency, reason }]
    })
  )
  return found.flat()
}

/** The whole files to leave out of the run when `missing` lack (parts of files are left out by the file). */
export const excludedFiles = (missing: ReadonlyArray<Missing>): ReadonlyArray<string> =>
  missing.flatMap(({ dependency }) => requirements[dependency].suites.filter((suite) => !suite.includes(": ")))

/** Encodes `missing` for TASKMETER_TEST_MISSING. */
export const encode = (missing: ReadonlyArray<Missing>): string => missing.map(({ dependency }) => dependency).join(",")

/** In a test worker: whether the run found `dependency` missing (a part needing it is then not defined). */
export const isMissing = (dependency: Dependency): boolean =>
  (process.env["TASKMETER_TEST_MISSING"] ?? "").split(",").includes(dependency)

/**
 * What the run prints at its end: each suite it could not run, under the command that enables
 * it; under CI, why the run failed before it started.
 */
export const notRunReport = (missing: ReadonlyArray<Missing>, ci: boolean): string =>
  missing.length === 0
    ? ""
    : [
        "",
        ci
          ? "CI=true, so a missing dependency fails the run; these suites need one:"
          : `Not run on this machine (CI=true makes ${missing.length === 1 ? "this" : "these"} a failure):`,
        ...missing.flatMap(({ dependency, reason }) => {
          const requirement = requirements[dependency]
          return [
            `  ${requirement.name} (${reason}): ${requirement.enable}`,
            ...requirement.suites.map((suite) => `    ${suite}`)
          ]
        }),
        ...(!ci && missing.some(({ dependency }) => dependency === "postgres")
          ? ["  In PostgreSQL's place the http suites ran storage-pg on PGlite, as did every *.pglite.test.ts."]
          : []),
        ""
      ].join("\n")
