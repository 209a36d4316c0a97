/**
 * The growth benchmark: for each size, a fresh database (`taskmeter_growth`, dropped at the end)
 * migrated by the server, prefilled with that many finished tasks (prefill.ts), VACUUM ANALYZE,
 * the server restarted; then admission for a big and a fresh small account, poll by id, list,
 * usage, the usage summary, a backlog drain by one worker, each housekeeping pass, WAL bytes per admission and bytes
 * per task on disk, printed with ratios to the empty database. Usage: bench/growth/README.md.
 */
import { execFile, spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { randomUUID } from "node:crypto"
import { once } from "node:events"
import { mkdtemp, rm } from "node:fs/promises"
import { cpus, loadavg, tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { parseArgs } from "node:util"
import { Effect, ManagedRuntime, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { Housekeeping } from "@taskmeter/kernel"
import { PgStore } from "@taskmeter/storage-pg"
import { Main } from "@taskmeter/http"
import { drive } from "./load.ts"
import type { Rate, Request } from "./load.ts"
import { explain } from "./plans.ts"
import type { Plan } from "./plans.ts"
import { prefill } from "./prefill.ts"

const { values: args } = parseArgs({
  options: {
    sizes: { type: "string", default: "0,1000000,10000000" },
    seconds: { type: "string", default: "5" },
    warmup: { type: "string", default: "1" },
    connections: { type: "string", default: "32" },
    repo: { type: "string", default: join(import.meta.dirname, "../..") },
    database: { type: "string", default: "taskmeter_growth" },
    json: { type: "boolean", default: false }
  }
})
const SIZES = args.sizes.split(",").map(Number)
const SECONDS = Number(args.seconds)
const WARMUP = Number(args.warmup)
const CONNECTIONS = Number(args.connections)
if (
  SIZES.some((n) => !Number.isInteger(n) || n < 0) ||
  !(SECONDS > 0 && SECONDS <= 60) ||
  !(WARMUP >= 0 && WARMUP <= 10) ||
  !(Number.isInteger(CONNECTIONS) && CONNECTIONS >= 1 && CONNECTIONS <= 256) ||
  !/^[a-z_][a-z0-9_]{0,40}$/.test(args.database)
) {
  throw new Error(
    "bench/growth: --sizes takes whole numbers >= 0, --seconds 0..60, --warmup 0..10, --connections 1..256, --database a lower-case name"
  )
}
/** The taskmeter whose server and worker run: this checkout, or another (`--repo /work/main` for a before figure). */
const BIN = join(resolve(args.repo), "packages/http/bin/taskmeter.ts")
const serverUrl =
  process.env.BENCH_DATABASE_URL ??
  process.env.DATABASE_URL ??
  process.env.TEST_DATABASE_URL ??
  "postgres://postgres@127.0.0.1:5432/test"
const DATABASE = args.database
const databaseUrl = (() => {
  const url = new URL(serverUrl)
  url.pathname = `/${DATABASE}`
  return url.href
})()
const NO_LIMIT = "1000000000"
const OPERATOR_TOKEN = randomUUID() + randomUUID()
const MODEL = "song-lyrics"
const BODY = Buffer.from(JSON.stringify({ model: MODEL, input: { prompt: "a song about a lighthouse keeper" } }))
/** How long a drain may take before the run gives up on it. */
const DRAIN_LIMIT_MS = 300_000
const log = (line: string) => (args.json ? process.stderr : process.stdout).write(`${line}\n`)

const READY = /taskmeter is listening on (\S+)[\s\S]*\n {2}admin +(\S+)\/admin\/rpc /

/** The database server's own database: creates and drops the bench's. */
const root = ManagedRuntime.make(PgStore.client({ url: serverUrl, maxConnections: 1 }))
const onRoot = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) => root.runPromise(SqlClient.SqlClient.use(f))

const children = new Set<ChildProcess>()
const dataDir = await mkdtemp(join(tmpdir(), "taskmeter-bench-growth-"))

const stop = async (child: ChildProcess) => {
  children.delete(child)
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, "exit")
  child.kill("SIGTERM")
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
  await exited
  clearTimeout(timer)
}

const dropDatabase = () => onRoot((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`).unprepared)

let cleaned: Promise<void> | undefined
const cleanup = () =>
  (cleaned ??= (async () => {
    await Promise.all([...children].map((child) => stop(child).catch(() => undefined)))
    await dropDatabase().catch((error) => console.error(`bench/growth: could not drop ${DATABASE}:`, error))
    await root.dispose().catch(() => undefined)
    await rm(dataDir, { recursive: true, force: true })
  })())
const abort = (reason: string) => {
  console.error(`bench/growth: ${reason}; cleaning up`)
  void cleanup().finally(() => process.exit(1))
}
process.once("SIGINT", () => abort("interrupted"))
process.once("SIGTERM", () => abort("terminated"))
// Bounds a hang: 20 minutes per size and a microsecond per prefilled task.
const budgetMs = SIZES.reduce((total, size) => total + 1_200_000 + size / 1000, 0)
setTimeout(() => abort(`still running after ${Math.round(budgetMs / 1000)} s`), budgetMs).unref()

const env = (extra: Record<string, string>) => ({
  ...process.env,
  DATABASE_URL: databaseUrl,
  DATA_DIR: dataDir,
  SIMULATED_ENABLED: "true",
  OPERATOR_TOKEN,
  LOG_LEVEL: "Warning",
  ...extra
})

/** `taskmeter start` on free ports, without workers; resolves once both listeners are up. */
const startServer = (): Promise<{ readonly child: ChildProcess; readonly url: URL; readonly adminUrl: string }> => {
  const child = spawn(process.execPath, [BIN, "start"], {
    env: env({
      HOST: "127.0.0.1",
      PORT: "0",
      ADMIN_PORT: "0",
      WORKERS: "false",
      SUBMISSIONS_PER_MINUTE: NO_LIMIT,
      MAX_UNFINISHED_TASKS: NO_LIMIT,
      KEY_RATE_LIMIT_PER_MINUTE: NO_LIMIT
    }),
    stdio: ["ignore", "pipe", "pipe"]
  })
  children.add(child)
  return new Promise((resolve, reject) => {
    let output = ""
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = READY.exec(output)
      if (match !== null) resolve({ child, url: new URL(match[1]!), adminUrl: match[2]! })
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("exit", (code) => reject(new Error(`the server exited with ${code} before listening:\n${output}`)))
  })
}

interface Created {
  readonly accountId: string
  readonly keyId: string
  readonly secret: string
}

/** `taskmeter admin account create` against the server's admin listener. */
const createAccount = (adminUrl: string, name: string): Promise<Created> =>
  new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      [BIN, "admin", "--url", adminUrl, "--json", "account", "create", "--name", name, "--credits-usd", "1000000000"],
      { env: { ...process.env, TASKMETER_ADMIN_TOKEN: OPERATOR_TOKEN }, timeout: 60_000 },
      (error, stdout, stderr) => {
        if (error !== null) return reject(new Error(`${error.message}\n${stderr}`))
        const created = JSON.parse(stdout)
        resolve({ accountId: created.account.id, keyId: created.key.key.id, secret: created.key.secret })
      }
    )
  )

interface Row {
  readonly size: number
  readonly prefillSeconds: number
  readonly bytesPerTask: number | undefined
  /** Bytes per prefilled task of each table (heap and TOAST) and each index. */
  readonly relations: Record<string, number>
  readonly admissionBig: Rate
  readonly admissionSmall: Rate
  readonly poll: Rate
  readonly list: Rate
  readonly usage: Rate
  readonly summary: Rate
  readonly walBytesPerAdmission: number
  readonly fpiBytesPerAdmission: number
  /** Shared buffers found in (hit) and read into PostgreSQL's cache per admission, over the whole database. */
  readonly blocksPerAdmission: { readonly hit: number; readonly read: number }
  readonly plans: ReadonlyArray<Plan>
  readonly checkpointsDuringAdmission: number
  readonly drain: { readonly tasks: number; readonly seconds: number; readonly perSecond: number }
  readonly housekeeping: Record<string, { readonly ms: number; readonly result: unknown }>
}

const measure = async (size: number): Promise<Row> => {
  await dropDatabase()
  await onRoot((sql) => sql.unsafe(`CREATE DATABASE ${DATABASE}`).unprepared)
  const db = ManagedRuntime.make(PgStore.client({ url: databaseUrl, maxConnections: 2 }))
  await db.runPromise(SqlClient.SqlClient.use((sql) => sql.unsafe("CREATE EXTENSION pg_walinspect").unprepared))
  const onDb = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) => db.runPromise(SqlClient.SqlClient.use(f))
  const first = (query: string) =>
    onDb((sql) => sql.unsafe<Record<string, unknown>>(query).unprepared).then((rows) => Object.values(rows[0]!)[0])
  const scalar = async (query: string): Promise<number> => Number(await first(query))
  try {
    // The server migrates the new database; the accounts that load it come from its admin listener.
    const migrating = await startServer()
    const big = await createAccount(migrating.adminUrl, "big")
    const small = await createAccount(migrating.adminUrl, "small")
    await stop(migrating.child)

    const orderedIds = (await scalar(`SELECT count(*) FROM pg_proc WHERE proname = 'taskmeter_uuidv7'`)) > 0
    const resultExpiry =
      (await scalar(
        `SELECT count(*) FROM information_schema.columns WHERE table_name = 'results' AND column_name = 'expires_at'`
      )) > 0
    const started = performance.now()
    log(`  ${size.toLocaleString("en")} tasks, ${orderedIds ? "UUID v7" : "random v4"} ids: prefilling...`)
    await db.runPromise(
      SqlClient.SqlClient.use((sql) =>
        prefill(sql, { bigAccountId: big.accountId, bigKeyId: big.keyId, tasks: size, orderedIds, resultExpiry }, (written) => {
          const seconds = (performance.now() - started) / 1000
          log(`    ${written.toLocaleString("en")} / ${size.toLocaleString("en")} tasks, ${seconds.toFixed(0)} s`)
        })
      )
    )
    await onDb((sql) => sql.unsafe("VACUUM ANALYZE").unprepared)
    await onDb((sql) => sql.unsafe("CHECKPOINT").unprepared)
    const prefillSeconds = (performance.now() - started) / 1000
    const bytes = await scalar(
      `SELECT pg_total_relation_size('tasks') + pg_total_relation_size('ledger_entries')
        + pg_total_relation_size('idempotency_keys') + pg_total_relation_size('results')`
    )
    log(`    done in ${prefillSeconds.toFixed(0)} s; ${(bytes / 2 ** 20).toFixed(0)} MiB in the four tables`)
    // Each table (heap and TOAST) and each of its indexes, in bytes per prefilled task.
    const relations = Object.fromEntries(
      (
        await onDb(
          (sql) =>
            sql.unsafe<{ name: string; bytes: string }>(
              `SELECT c.relname AS name, pg_table_size(c.oid)::text AS bytes FROM pg_class c
             WHERE c.relname IN ('tasks', 'ledger_entries', 'idempotency_keys', 'results') AND c.relnamespace = 'public'::regnamespace
             UNION ALL
             SELECT i.relname, pg_relation_size(i.oid)::text FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
             JOIN pg_class t ON t.oid = x.indrelid
             WHERE t.relname IN ('tasks', 'ledger_entries', 'idempotency_keys', 'results') AND t.relnamespace = 'public'::regnamespace`
            ).unprepared
        )
      ).map(({ bytes, name }) => [name, size === 0 ? 0 : Math.round(Number(bytes) / size)])
    )
    if (size > 0) {
      log(
        `    bytes per task: ${Object.entries(relations)
          .map(([name, perTask]) => `${name} ${perTask}`)
          .join(", ")}`
      )
    }

    const server = await startServer()
    const window = { connections: CONNECTIONS, seconds: SECONDS, warmup: WARMUP }
    let keys = 0
    const admit = (secret: string) => (): Request => ({
      method: "POST",
      path: "/api/v1/jobs",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", "idempotency-key": `growth-${keys++}` },
      body: BODY,
      status: 202
    })
    // The flushed end: pg_walinspect refuses an LSN past it (others' writes keep the insert position ahead).
    const lsn = () => first("SELECT pg_current_wal_flush_lsn()::text")
    const checkpoints = () => scalar("SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter")
    const walBefore = await lsn()
    const checkpointsBefore = await checkpoints()
    const tasksBefore = await scalar("SELECT count(*) FROM tasks")
    const blocks = async () => {
      // Backends report their counters at most once a second.
      await new Promise((resolve) => setTimeout(resolve, 1500))
      const hit = await scalar(`SELECT blks_hit FROM pg_stat_database WHERE datname = '${DATABASE}'`)
      const read = await scalar(`SELECT blks_read FROM pg_stat_database WHERE datname = '${DATABASE}'`)
      return { hit, read }
    }
    const blocksBefore = await blocks()
    const admissionBig = await drive(server.url, window, admit(big.secret))
    log(`    admission, big account: ${admissionBig.perSecond.toFixed(0)}/s`)
    const admissionSmall = await drive(server.url, window, admit(small.secret))
    log(`    admission, small account: ${admissionSmall.perSecond.toFixed(0)}/s`)
    const admitted = (await scalar("SELECT count(*) FROM tasks")) - tasksBefore
    // The cluster's WAL holds every database's writes: only the records of this one's blocks count
    // (pg_walinspect), with their full-page images; commit records name no block and are left out.
    const walEnd = await lsn()
    // NaN when the server recycled that WAL already (other databases' writes on a shared server).
    const walSum = (column: string) =>
      scalar(
        `SELECT coalesce(sum(${column}), 0) FROM pg_get_wal_records_info('${walBefore}', '${walEnd}')
         WHERE block_ref LIKE '%/' || (SELECT oid FROM pg_database WHERE datname = current_database()) || '/%'`
      ).catch((error: unknown) => {
        log(`    WAL not measured: ${error instanceof Error ? error.message : String(error)}`)
        return Number.NaN
      })
    const walBytes = await walSum("record_length")
    const fpiBytes = await walSum("fpi_length")
    const checkpointsDuringAdmission = (await checkpoints()) - checkpointsBefore
    const blocksAfter = await blocks()
    const blocksPerAdmission = {
      hit: (blocksAfter.hit - blocksBefore.hit) / Math.max(admitted, 1),
      read: (blocksAfter.read - blocksBefore.read) / Math.max(admitted, 1)
    }
    log(
      `    per admission: ${(walBytes / Math.max(admitted, 1)).toFixed(0)} B of WAL ` +
        `(${(fpiBytes / Math.max(admitted, 1)).toFixed(0)} B full-page images), buffers ` +
        `${blocksPerAdmission.hit.toFixed(1)} hit ${blocksPerAdmission.read.toFixed(1)} read; ${checkpointsDuringAdmission} checkpoints`
    )

    const read = (path: string) =>
      ({ method: "GET", path, headers: { authorization: `Bearer ${big.secret}` }, status: 200 }) as const
    // Poll: prefilled tasks of the big account at random (the admitted ones when there are none).
    const ids = (
      await onDb(
        (sql) =>
          sql.unsafe<{ id: string }>(
            size >= 100_000
              ? `SELECT id FROM tasks TABLESAMPLE SYSTEM (1) WHERE account_id = '${big.accountId}' LIMIT 2000`
              : `SELECT id FROM tasks WHERE account_id = '${big.accountId}' ORDER BY random() LIMIT 2000`
          ).unprepared
      )
    ).map(({ id }) => id)
    let polled = 0
    const poll = await drive(server.url, window, () => read(`/api/v1/jobs/${ids[polled++ % ids.length]}`))
    log(`    poll by id: ${poll.perSecond.toFixed(0)}/s`)
    const list = await drive(server.url, window, () => read("/api/v1/jobs"))
    log(`    list: ${list.perSecond.toFixed(0)}/s`)
    const usage = await drive(server.url, window, () => read("/api/v1/usage"))
    log(`    usage: ${usage.perSecond.toFixed(0)}/s`)
    // The spend of the last 30 days, which holds every prefilled charge of the account.
    const summary = await drive(server.url, window, () => read("/api/v1/usage/summary"))
    log(`    usage summary: ${summary.perSecond.toFixed(0)}/s`)
    await stop(server.child)
    const plans = await db.runPromise(SqlClient.SqlClient.use((sql) => explain(sql, big.accountId, ids[0]!)))
    for (const plan of plans) {
      log(
        `    plan ${plan.statement}: ${plan.ms.toFixed(2)} ms, buffers ${plan.hit} hit ${plan.read} read, ${plan.indexes.join(", ")}`
      )
    }

    // The backlog: everything admitted above, drained by one worker process.
    const backlog = await scalar("SELECT count(*) FROM tasks WHERE status IN ('queued', 'submitting', 'running')")
    const worker = spawn(process.execPath, [BIN, "worker"], { env: env({}), stdio: ["ignore", "ignore", "inherit"] })
    children.add(worker)
    // Timed from the first task the worker finished (its start-up is not the drain) to the last.
    const spawned = performance.now()
    let drainStart: { readonly at: number; readonly left: number } | undefined
    for (;;) {
      const left = await scalar("SELECT count(*) FROM tasks WHERE status IN ('queued', 'submitting', 'running')")
      if (drainStart === undefined && left < backlog) drainStart = { at: performance.now(), left }
      if (left === 0) break
      if (worker.exitCode !== null) throw new Error(`the worker exited with ${worker.exitCode}`)
      if (performance.now() - spawned > DRAIN_LIMIT_MS)
        throw new Error(`the worker left ${left} tasks after ${DRAIN_LIMIT_MS / 1000} s`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const drained = drainStart === undefined ? 0 : drainStart.left
    const drainSeconds = drainStart === undefined ? 0 : (performance.now() - drainStart.at) / 1000
    await stop(worker)
    log(`    drain: ${drained} of ${backlog} tasks in ${drainSeconds.toFixed(1)} s after the first`)

    // Each housekeeping pass, once, in this process over the same stores the worker uses.
    const housekeeping: Record<string, { ms: number; result: unknown }> = {}
    const stores = ManagedRuntime.make(
      Main.storage(dataDir, {
        ...Main.defaults,
        databaseUrl: Option.some(Redacted.make(databaseUrl)),
        databaseSchema: Option.none()
      })
    )
    try {
      const passes: Record<string, Effect.Effect<unknown, unknown, any>> = {
        purgeIdempotencyKeys: Housekeeping.purgeIdempotencyKeys(),
        sweepOrphanResults: Housekeeping.sweepOrphanResults()
      }
      for (const [name, pass] of Object.entries(passes)) {
        const at = performance.now()
        const result = await stores.runPromise(pass)
        housekeeping[name] = { ms: performance.now() - at, result }
        log(`    ${name}: ${housekeeping[name].ms.toFixed(0)} ms`)
      }
    } finally {
      await stores.dispose()
    }

    return {
      size,
      prefillSeconds,
      bytesPerTask: size === 0 ? undefined : bytes / size,
      relations,
      admissionBig,
      admissionSmall,
      poll,
      list,
      usage,
      summary,
      walBytesPerAdmission: walBytes / Math.max(admitted, 1),
      fpiBytesPerAdmission: fpiBytes / Math.max(admitted, 1),
      blocksPerAdmission,
      plans,
      checkpointsDuringAdmission,
      drain: { tasks: drained, seconds: drainSeconds, perSecond: drainSeconds > 0 ? drained / drainSeconds : 0 },
      housekeeping
    }
  } finally {
    await db.dispose()
  }
}

const columns: ReadonlyArray<readonly [string, (row: Row) => number | undefined, boolean]> = [
  ["admission big /s", (row) => row.admissionBig.perSecond, true],
  ["big p99 ms", (row) => row.admissionBig.p99, false],
  ["admission small /s", (row) => row.admissionSmall.perSecond, true],
  ["poll /s", (row) => row.poll.perSecond, true],
  ["list /s", (row) => row.list.perSecond, true],
  ["usage /s", (row) => row.usage.perSecond, true],
  ["summary /s", (row) => row.summary.perSecond, true],
  ["drain /s", (row) => row.drain.perSecond, true],
  ["WAL B/admission", (row) => row.walBytesPerAdmission, false],
  ["of which FPI B", (row) => row.fpiBytesPerAdmission, false],
  ["blocks hit/admission", (row) => row.blocksPerAdmission.hit, false],
  ["blocks read/admission", (row) => row.blocksPerAdmission.read, false],
  ["B/task on disk", (row) => row.bytesPerTask, false],
  ["purge keys ms", (row) => row.housekeeping.purgeIdempotencyKeys?.ms, false],
  ["orphan sweep ms", (row) => row.housekeeping.sweepOrphanResults?.ms, false]
]

const cell = (value: number | undefined, baseline: number | undefined, ratio: boolean) =>
  value === undefined
    ? "-"
    : ratio && baseline !== undefined
      ? `${value.toFixed(0)} (${(value / baseline).toFixed(2)}x)`
      : value.toFixed(value < 10 ? 1 : 0)

try {
  log(
    `taskmeter growth benchmark: sizes ${SIZES.join(", ")}; ${CONNECTIONS} connections, ${SECONDS} s per measure after ` +
      `${WARMUP} s warm-up; ${cpus().length} CPUs (${cpus()[0]?.model ?? "unknown"}), load average ` +
      `${loadavg()[0]!.toFixed(2)}; server ${BIN}; PostgreSQL database ${DATABASE} at ${serverUrl.replace(/\/\/[^@]*@/, "//")}`
  )
  const rows: Array<Row> = []
  for (const size of SIZES) rows.push(await measure(size))
  const baseline = rows.find((row) => row.size === 0)
  log("")
  log(`| stored tasks | prefill s | ${columns.map(([name]) => name).join(" | ")} |`)
  log(`|${"---|".repeat(columns.length + 2)}`)
  for (const row of rows) {
    const cells = columns.map(([, of, ratio]) => cell(of(row), baseline === undefined ? undefined : of(baseline), ratio))
    log(`| ${row.size.toLocaleString("en")} | ${row.prefillSeconds.toFixed(0)} | ${cells.join(" | ")} |`)
  }
  log(
    "(ratios to the empty database; checkpoints during admission: " +
      rows.map((row) => row.checkpointsDuringAdmission).join(", ") +
      ")"
  )
  if (args.json) {
    process.stdout.write(
      `${JSON.stringify({
        machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, loadAverage: loadavg() },
        connections: CONNECTIONS,
        seconds: SECONDS,
        server: BIN,
        rows
      })}\n`
    )
  }
} finally {
  await cleanup()
}
