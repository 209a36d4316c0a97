/**
 * The admission benchmark: POST /api/v1/jobs on PostgreSQL in a fresh schema, four paths taking
 * turns per connection count (http: the real server; bare: a node:http handler on the same store
 * statement; kernel: TaskRunner without HTTP; store: TaskStore.admit alone), reporting submits/s,
 * latency, the cores used and steal, and checking one task per admission at the end.
 * Usage, options and database: bench/admission/README.md; results: bench/RESULTS.md.
 */
import { spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { randomUUID } from "node:crypto"
import { once } from "node:events"
import { mkdtemp, rm } from "node:fs/promises"
import { Agent, request } from "node:http"
import type { Socket } from "node:net"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { parseArgs } from "node:util"
import { Effect, Layer, ManagedRuntime, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { Accounts, Ids, Money, Pricer, TaskRunner, TaskStore } from "@taskmeter/kernel"
import { Simulated } from "@taskmeter/providers"
import { PgStore } from "@taskmeter/storage-pg"
import { Main } from "@taskmeter/http"
import * as Cpu from "../support/cpu.ts"
import { summarize } from "../support/percentile.ts"
import type { Summary } from "../support/percentile.ts"

const { values: args } = parseArgs({
  options: {
    connections: { type: "string", default: "1,8,32" },
    seconds: { type: "string", default: "6" },
    rounds: { type: "string", default: "3" },
    warmup: { type: "string", default: "0.5" },
    "max-requests": { type: "string", default: "200000" },
    accounts: { type: "string", default: "1" },
    paths: { type: "string", default: "http,bare,kernel,store" },
    model: { type: "string", default: "song-lyrics" },
    json: { type: "boolean", default: false }
  }
})

const LEVELS = args.connections.split(",").map(Number)
const SECONDS = Number(args.seconds)
const ROUNDS = Number(args.rounds)
const WARMUP = Number(args.warmup)
const MAX_REQUESTS = Number(args["max-requests"])
const ACCOUNTS = Number(args.accounts)
const MODEL = args.model
if (
  LEVELS.some((n) => !Number.isInteger(n) || n < 1 || n > 256) ||
  !(SECONDS > 0 && SECONDS <= 60) ||
  !(Number.isInteger(ROUNDS) && ROUNDS >= 1 && ROUNDS <= 10) ||
  !(WARMUP >= 0 && WARMUP <= 10) ||
  !(MAX_REQUESTS >= 1) ||
  !(Number.isInteger(ACCOUNTS) && ACCOUNTS >= 1 && ACCOUNTS <= 256)
) {
  throw new Error(
    "bench/admission: --connections takes 1..256 each, --seconds 0..60, --rounds 1..10, --warmup 0..10, " +
      "--max-requests >= 1, --accounts 1..256"
  )
}
const databaseUrl =
  process.env.BENCH_DATABASE_URL ??
  process.env.DATABASE_URL ??
  process.env.TEST_DATABASE_URL ??
  "postgres://postgres@127.0.0.1:5432/test"
/** Seconds of the unrecorded first pass of each path. */
const FIRST_PASS = 2
/** Far above anything a run reaches, so that no limit refuses a submission. */
const NO_LIMIT = 1_000_000_000
const CREDITS = Money.micros(1_000_000_000_000)
const INPUT = { prompt: "a song about a lighthouse keeper" }
const BODY = Buffer.from(JSON.stringify({ model: MODEL, input: INPUT }))
const SERVER = join(import.meta.dirname, "../../packages/http/bin/start.ts")
const BARE_SERVER = join(import.meta.dirname, "bare-server.ts")
const serverNodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "")
const log = (line: string) => (args.json ? process.stderr : process.stdout).write(`${line}\n`)

type Path = "http" | "bare" | "kernel" | "store"
const ALL_PATHS: ReadonlyArray<Path> = ["http", "bare", "kernel", "store"]
const PATHS = args.paths.split(",") as ReadonlyArray<Path>
if (PATHS.length === 0 || PATHS.some((path) => !ALL_PATHS.includes(path))) {
  throw new Error(`bench/admission: --paths takes a comma-separated list of ${ALL_PATHS.join(", ")}`)
}
const DESCRIPTION: Record<Path, string> = {
  http: "POST /api/v1/jobs to the server process",
  bare: "POST to a bare node:http process: the same statement per batch, no framework or kernel (the issue's yardstick)",
  kernel: "TaskRunner.submit of a presented key (authentication inside admission) in this process, no HTTP",
  store: "TaskStore.admit alone in this process: the bare admission transaction"
}

interface Cell extends Summary {
  readonly path: Path
  readonly connections: number
  readonly seconds: number
  readonly perSecond: number
  /** Sockets the load generator opened (http only): N when connections were kept alive. */
  readonly sockets?: number | undefined
  readonly cores?: Cpu.CoresUsed | undefined
}

const schema = `bench_admission_${randomUUID().replaceAll("-", "").slice(0, 16)}`
const runId = randomUUID().slice(0, 8)
let sequence = 0
const nextKey = () => `bench-${runId}-${sequence++}`
/** Every admission answered, warm-ups included: the tasks table must end up holding exactly these. */
let admitted = 0

const benchDir = await mkdtemp(join(tmpdir(), "taskmeter-bench-admission-"))
const serverDir = await mkdtemp(join(tmpdir(), "taskmeter-bench-admission-server-"))

const settings: Main.Settings = {
  ...Main.defaults,
  databaseUrl: Option.some(Redacted.make(databaseUrl)),
  databaseSchema: Option.some(schema),
  submissionsPerMinute: NO_LIMIT,
  maxUnfinishedTasks: NO_LIMIT,
  keyRateLimitPerMinute: NO_LIMIT,
  workers: false
}

/** The server's own composition of kernel and storage, for the paths without HTTP. */
const kernel = ManagedRuntime.make(
  Main.kernel({
    settings,
    adapters: [Simulated.make({ models: [MODEL] })],
    mediaUrls: { baseUrl: "http://127.0.0.1", secret: Redacted.make(randomUUID() + randomUUID()) },
    pricesFile: Main.pricesFileOf(benchDir)
  }).pipe(Layer.provideMerge(Main.storage(benchDir, settings)))
)
/** Outside the schema: checks the tasks at the end and drops the schema. */
const admin = ManagedRuntime.make(PgStore.client({ url: databaseUrl, maxConnections: 1 }))

const children: Array<ChildProcess> = []
let cleaned: Promise<void> | undefined

const stop = async (child: ChildProcess) => {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, "exit")
  child.kill("SIGTERM")
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
  await exited
  clearTimeout(timer)
}

const cleanup = () =>
  (cleaned ??= (async () => {
    await Promise.all(children.map((child) => stop(child).catch(() => undefined)))
    await kernel.dispose().catch(() => undefined)
    await admin
      .runPromise(SqlClient.SqlClient.use((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`))
      .catch((error) => console.error(`bench/admission: could not drop schema ${schema}:`, error))
    await admin.dispose().catch(() => undefined)
    await rm(benchDir, { recursive: true, force: true })
    await rm(serverDir, { recursive: true, force: true })
  })())

const abort = (reason: string) => {
  console.error(`bench/admission: ${reason}; cleaning up`)
  void cleanup().finally(() => process.exit(1))
}
process.once("SIGINT", () => abort("interrupted"))
process.once("SIGTERM", () => abort("terminated"))
// The measurements are bounded; this bounds a hang too (a stuck server, an unreachable database).
const budgetMs = (LEVELS.length * PATHS.length * (ROUNDS * WARMUP + SECONDS) + PATHS.length * FIRST_PASS + 120) * 1000
setTimeout(() => abort(`still running after ${budgetMs / 1000} s`), budgetMs).unref()

interface Started {
  readonly url: URL
  readonly pid: number | undefined
}

/** Starts a server script on an ephemeral port and resolves with its base URL. */
const startChild = (script: string, env: Record<string, string>): Promise<Started> => {
  const child = spawn(process.execPath, [...serverNodeArgs, script], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"]
  })
  children.push(child)
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! })
    lines.on("line", (line) => {
      const match = /listening on (http:\/\/\S+)/.exec(line)
      if (match !== null) resolve({ url: new URL(match[1]!), pid: child.pid })
    })
    child.once("exit", (code) => reject(new Error(`the server exited with ${code} before listening`)))
  })
}

/** What one measurement window collected. */
interface Window {
  readonly samples: ReadonlyArray<number>
  readonly seconds: number
  readonly cpu: Cpu.CpuTime | undefined
  /** Sockets the load generator opened (http only). */
  readonly sockets?: number | undefined
}

/**
 * Runs `connections` loops of `send` (told the loop's index) back to back: `warmup` seconds
 * unrecorded, then `seconds` (or until `maxRequests` answers). A request counts when it started
 * and ended inside the window.
 */
const drive = async (
  connections: number,
  { maxRequests, seconds, warmup }: { readonly warmup: number; readonly seconds: number; readonly maxRequests: number },
  send: (loop: number) => Promise<void>,
  serverPid?: number | undefined
): Promise<Window> => {
  const samples: Array<number> = []
  const start = performance.now() + warmup * 1000
  let end = start + seconds * 1000
  let before: Cpu.CpuTime | undefined
  let cpu: Cpu.CpuTime | undefined
  const loop = async (index: number) => {
    for (;;) {
      const sent = performance.now()
      if (sent >= end) return
      await send(index)
      admitted++
      const answered = performance.now()
      if (sent >= start && answered <= end) {
        samples.push(answered - sent)
        if (samples.length === maxRequests) end = answered
      }
    }
  }
  // CPU counters are read as the window opens and closes (at the cap too), not after the stragglers.
  const window = new Promise<void>((resolve) => {
    const check = () => {
      const now = performance.now()
      if (before === undefined && Cpu.available) before = Cpu.snapshot(serverPid)
      if (now < end) return void setTimeout(check, Math.min(20, Math.max(1, end - now)))
      if (before !== undefined) cpu = Cpu.between(before, Cpu.snapshot(serverPid))
      resolve()
    }
    setTimeout(check, warmup * 1000)
  })
  await Promise.all([Promise.all(Array.from({ length: connections }, (_, index) => loop(index))), window])
  return { samples, seconds: (end - start) / 1000, cpu }
}

/** POST /api/v1/jobs over exactly `connections` keep-alive sockets. */
const driveHttp = async (
  { pid, url: base }: Started,
  keys: ReadonlyArray<string>,
  connections: number,
  options: Parameters<typeof drive>[1]
) => {
  const agent = new Agent({ keepAlive: true, maxSockets: connections, maxFreeSockets: connections })
  const sockets = new Set<Socket>()
  const headers = keys.map((key) => ({
    authorization: `Bearer ${key}`,
    "content-type": "application/json",
    "content-length": String(BODY.length)
  }))
  const send = (loop: number) =>
    new Promise<void>((resolve, reject) => {
      const req = request(
        {
          hostname: base.hostname,
          port: base.port,
          path: "/api/v1/jobs",
          method: "POST",
          agent,
          headers: { ...headers[loop % keys.length], "idempotency-key": nextKey() }
        },
        (res) => {
          if (res.statusCode === 202) {
            res.resume()
            res.once("end", resolve)
            return
          }
          const chunks: Array<Buffer> = []
          res.on("data", (chunk: Buffer) => chunks.push(chunk))
          res.once("end", () => reject(new Error(`POST /api/v1/jobs answered ${res.statusCode}: ${Buffer.concat(chunks)}`)))
        }
      )
      req.once("socket", (socket) => sockets.add(socket))
      req.once("error", reject)
      req.end(BODY)
    })
  try {
    return { ...(await drive(connections, options, send, pid)), sockets: sockets.size }
  } finally {
    agent.destroy()
  }
}

/** A cell's windows (one per round) as one set of figures. */
const cellOf = (path: Path, connections: number, windows: ReadonlyArray<Window>): Cell => {
  const seconds = windows.reduce((total, window) => total + window.seconds, 0)
  const samples = windows.flatMap((window) => window.samples)
  const cpu = windows.every((window) => window.cpu !== undefined)
    ? windows.map((window) => window.cpu!).reduce(Cpu.add)
    : undefined
  return {
    path,
    connections,
    seconds,
    perSecond: samples.length / seconds,
    ...summarize(samples),
    ...(path === "http" || path === "bare" ? { sockets: Math.max(...windows.map((window) => window.sockets ?? 0)) } : {}),
    cores: cpu === undefined ? undefined : Cpu.coresUsed(cpu)
  }
}

const label = (cell: Cell) =>
  [
    String(cell.connections).padStart(11),
    cell.path.padEnd(6),
    cell.perSecond.toFixed(0).padStart(9),
    cell.p50.toFixed(2).padStart(6),
    cell.p99.toFixed(2).padStart(6),
    cell.max.toFixed(2).padStart(6),
    cell.cores === undefined
      ? "-"
      : [cell.cores.self, cell.cores.server, cell.cores.postgres, cell.cores.rest, cell.cores.steal]
          .map((c) => c.toFixed(2))
          .join(" / ")
  ].join(" | ")

try {
  const { callers, keys, quote, services } = await kernel.runPromise(
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const keys: Array<string> = []
      const callers: Array<Accounts.Caller> = []
      for (let i = 0; i < ACCOUNTS; i++) {
        const created = yield* accounts.create({ name: `bench ${i}`, credits: CREDITS })
        keys.push(created.key.secret)
        callers.push(yield* accounts.authenticate(created.key.secret))
      }
      const quote = yield* (yield* Pricer.Pricer).quote(MODEL, INPUT)
      return {
        callers,
        keys,
        quote,
        services: { runner: yield* TaskRunner.TaskRunner, tasks: yield* TaskStore.TaskStore }
      }
    })
  )
  const server = await startChild(SERVER, {
    DATABASE_URL: databaseUrl,
    DATABASE_SCHEMA: schema,
    HOST: "127.0.0.1",
    PORT: "0",
    DATA_DIR: serverDir,
    WORKERS: "false",
    SIMULATED_ENABLED: "true",
    SUBMISSIONS_PER_MINUTE: String(NO_LIMIT),
    MAX_UNFINISHED_TASKS: String(NO_LIMIT),
    KEY_RATE_LIMIT_PER_MINUTE: String(NO_LIMIT)
  })
  const bare = await startChild(BARE_SERVER, {
    BARE_DATABASE_URL: databaseUrl,
    BARE_SCHEMA: schema,
    BARE_QUOTE: JSON.stringify(quote)
  })

  const submitKernel = (loop: number) =>
    Effect.runPromise(
      Effect.gen(function* () {
        const submission = { model: MODEL, input: INPUT, idempotencyKey: nextKey() }
        const { replayed } = yield* services.runner.submit(
          TaskRunner.presentedKey(Redacted.make(keys[loop % ACCOUNTS]!)),
          submission
        )
        if (replayed) return yield* Effect.die("a fresh Idempotency-Key was replayed")
      })
    )

  const admitStore = (loop: number) =>
    Effect.runPromise(
      Effect.gen(function* () {
        const caller = callers[loop % ACCOUNTS]!
        const now = Date.now()
        const id = Ids.makeTaskId()
        const result = yield* services.tasks.admit({
          task: {
            id,
            accountId: caller.accountId,
            apiKeyId: caller.apiKeyId,
            model: MODEL,
            input: INPUT,
            priceMicros: quote.priceMicros,
            unitMicros: quote.unitMicros,
            quantity: quote.quantity,
            settlement: quote.settlement,
            createdAt: new Date(now),
            deadlineAt: new Date(now + 600_000)
          },
          idempotencyKey: nextKey(),
          fingerprint: id,
          idempotencyExpiresAt: new Date(now + 86_400_000),
          limits: { submissionsPerMinute: NO_LIMIT, maxUnfinishedTasks: NO_LIMIT, keyUsageLimit: caller.keyUsageLimit }
        })
        if (result._tag !== "Admitted") return yield* Effect.die(`admission refused: ${result._tag}`)
      })
    )

  const run = (path: Path, connections: number, options: Parameters<typeof drive>[1]): Promise<Window> =>
    path === "http" || path === "bare"
      ? driveHttp(path === "http" ? server : bare, keys, connections, options)
      : drive(connections, options, path === "kernel" ? submitKernel : admitStore)

  const top = Math.max(...LEVELS)
  log(
    `taskmeter admission benchmark: ${MODEL}, ${SECONDS} s per cell in ${ROUNDS} rounds after ${WARMUP} s warm-up each, ` +
      `${cpus().length} CPUs (${cpus()[0]?.model ?? "unknown"}), load average ${loadavg()[0]!.toFixed(2)}, ` +
      `${ACCOUNTS} account${ACCOUNTS === 1 ? "" : "s"}, PostgreSQL at ${databaseUrl.replace(/\/\/[^@]*@/, "//")}`
  )
  for (const path of PATHS) log(`  ${path.padEnd(6)} ${DESCRIPTION[path]}`)
  // JIT, pools and prepared statements: one unrecorded pass of every path at the top level.
  for (const path of PATHS) await run(path, top, { warmup: 0, seconds: FIRST_PASS, maxRequests: MAX_REQUESTS })

  log("")
  log("connections | path   | submits/s | p50 ms | p99 ms | max ms | cores: bench / server / postgres / rest of box / steal")
  const cells: Array<Cell> = []
  const round = { warmup: WARMUP, seconds: SECONDS / ROUNDS, maxRequests: Math.ceil(MAX_REQUESTS / ROUNDS) }
  for (const connections of LEVELS) {
    const windows = new Map<Path, Array<Window>>(PATHS.map((path) => [path, []]))
    for (let r = 0; r < ROUNDS; r++) {
      for (const path of PATHS) {
        const window = await run(path, connections, round)
        if (window.sockets !== undefined && window.sockets !== connections) {
          throw new Error(`the load generator opened ${window.sockets} connections instead of ${connections}`)
        }
        windows.get(path)!.push(window)
      }
    }
    for (const path of PATHS) {
      const cell = cellOf(path, connections, windows.get(path)!)
      cells.push(cell)
      log(label(cell))
    }
  }

  const stored = await admin.runPromise(
    SqlClient.SqlClient.use((sql) => sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM ${sql(schema)}.tasks`)
  )
  if (stored[0]!.n !== admitted) throw new Error(`${admitted} admissions answered, but ${stored[0]!.n} tasks stored`)

  const rate = (path: Path, connections: number) =>
    cells.find((cell) => cell.path === path && cell.connections === connections)?.perSecond
  const ratio = (path: Path, connections: number) => {
    const http = rate("http", connections)
    const other = rate(path, connections)
    return http === undefined || other === undefined ? undefined : http / other
  }
  const ratios = LEVELS.map((connections) => ({
    connections,
    httpOverBare: ratio("bare", connections),
    httpOverStore: ratio("store", connections),
    httpOverKernel: ratio("kernel", connections)
  }))
  log("")
  for (const { connections, ...of } of ratios) {
    const parts = [
      [of.httpOverBare, "the bare handler"],
      [of.httpOverKernel, "the kernel path"],
      [of.httpOverStore, "the store admission"]
    ]
      .filter(([value]) => value !== undefined)
      .map(([value, name]) => `${(100 * (value as number)).toFixed(0)}% of ${name}`)
    if (parts.length > 0) log(`${String(connections).padStart(3)} connections: http reaches ${parts.join(", ")}`)
  }
  log(`books: ${admitted} admissions answered, ${stored[0]!.n} tasks stored`)
  if (args.json) {
    process.stdout.write(
      `${JSON.stringify({
        model: MODEL,
        seconds: SECONDS,
        rounds: ROUNDS,
        accounts: ACCOUNTS,
        warmupSeconds: WARMUP,
        machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, loadAverage: loadavg() },
        paths: DESCRIPTION,
        cells,
        ratios,
        tasksStored: stored[0]!.n
      })}\n`
    )
  }
} finally {
  await cleanup()
}
