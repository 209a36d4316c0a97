/**
 * The benchmark's taskmeter as an operator deploys it (`--server deployed.ts`): `taskmeter start`
 * with its default middleware (observation, access log) and chat routes, its chat upstream the mock
 * at UPSTREAM_URL, over a fresh PostgreSQL database with STORE=pg (dropped at the end) or the
 * embedded default; limits out of the way. Prints one JSON line: its base URL, the keys of ACCOUNTS
 * (default 1) new accounts funded with CREDITS each, and the server's pid (whose CPU the run reads). Stops it on SIGTERM. Node's
 * --cpu-prof flags given to this script (run.ts --cpu-prof) go to the server, whose CPU is measured.
 * With GC_LOG (run.ts --gc) the server runs with --trace-gc, its collections appended to that file.
 */
import { randomUUID } from "node:crypto"
import { once } from "node:events"
import { appendFileSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { Effect, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import { PgStore } from "@taskmeter/storage-pg"
import { BIN, startTaskmeter, taskmeterAdmin } from "../support/taskmeter.ts"

const NO_LIMIT = "1000000000"
const CREDITS_USD = "1000"
const databaseUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const operatorToken = randomUUID() + randomUUID()
/** Where the server's collections go, when asked (run.ts --gc); the lines --trace-gc prints for them. */
const gcLog = process.env.GC_LOG
const GC_LINE = /: (Scavenge|Mark-Compact) /
const dataDir = await mkdtemp(join(tmpdir(), "bench-chat-deployed-"))

const database = process.env.STORE === "pg" ? `bench_chat_${randomUUID().replaceAll("-", "").slice(0, 16)}` : undefined
const root = ManagedRuntime.make(PgStore.client({ url: databaseUrl, maxConnections: 1 }))
const onRoot = (statement: string) =>
  root.runPromise(SqlClient.SqlClient.use((sql) => sql.unsafe(statement).unprepared.pipe(Effect.asVoid)))
const urlOf = (name: string) => Object.assign(new URL(databaseUrl), { pathname: `/${name}` }).href
if (database !== undefined) await onRoot(`CREATE DATABASE ${database}`)

const {
  child: server,
  url,
  adminUrl
} = await startTaskmeter(
  BIN,
  {
    ...process.env,
    ...(database === undefined ? {} : { DATABASE_URL: urlOf(database) }),
    DATA_DIR: dataDir,
    OPERATOR_TOKEN: operatorToken,
    HOST: "127.0.0.1",
    PORT: "0",
    ADMIN_PORT: "0",
    WORKERS: "false",
    CHAT_UPSTREAM_BASE_URL: process.env.UPSTREAM_URL!,
    CHAT_UPSTREAM_API_KEY: "bench",
    CHAT_REQUESTS_PER_MINUTE: NO_LIMIT,
    CHAT_MAX_OPEN_REQUESTS: "100000",
    KEY_RATE_LIMIT_PER_MINUTE: NO_LIMIT
  },
  (child) => {
    if (gcLog === undefined) return
    createInterface({ input: child.stdout! }).on("line", (line) => {
      if (GC_LINE.test(line)) appendFileSync(gcLog, `${line}\n`)
    })
  },
  [...process.execArgv.filter((flag) => flag.startsWith("--cpu-prof")), ...(gcLog === undefined ? [] : ["--trace-gc"])]
)

const admin = (command: ReadonlyArray<string>): Promise<any> =>
  taskmeterAdmin(BIN, ["--url", adminUrl, ...command], { ...process.env, TASKMETER_ADMIN_TOKEN: operatorToken })
const accounts = Number(process.env.ACCOUNTS ?? 1)
const keys: Array<string> = []
// Four CLI processes at a time, so that the box is quiet again by the time the run measures.
for (let i = 0; i < accounts; i += 4) {
  const names = Array.from({ length: Math.min(4, accounts - i) }, (_, j) => `bench ${i + j}`)
  const created = await Promise.all(
    names.map((name) => admin(["account", "create", "--name", name, "--credits-usd", CREDITS_USD]))
  )
  keys.push(...created.map((account) => account.key.secret as string))
}
console.log(JSON.stringify({ url: `${url.replace(/\/$/, "")}/api/v1`, keys, pid: server.pid }))

process.once("SIGTERM", async () => {
  const exited = once(server, "exit")
  server.kill("SIGTERM")
  await exited
  if (database !== undefined) await onRoot(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
  await root.dispose()
  await rm(dataDir, { recursive: true, force: true })
  process.exit(0)
})
