/**
 * The growth benchmark: one database per size (`<database>_<size>`), migrated by the server,
 * prefilled with that many finished tasks (prefill.ts), VACUUM ANALYZE; then `--rounds` rounds
 * that measure the sizes alternately (0, 10M, 0, 10M, ...), each with the server started again:
 * admission for the big and a fresh small account, poll by id, list, usage, the usage summary, WAL bytes per
 * admission, plans, each housekeeping pass, a backlog drain by one worker; printed with the
 * median over rounds and the median of each round's ratio to the empty database, and the load
 * average of each measure. `--keep` keeps the databases, and a later run reuses a kept one whose
 * prefill finished. Usage: bench/growth/README.md.
 */
import { spawn } from "node:child_process"
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
import { startTaskmeter, taskmeterAdmin } from "../support/taskmeter.ts"

const { values: args } = parseArgs({
  options: {
    sizes: { type: "string", default: "0,1000000,10000000" },
    rounds: { type: "string", default: "3" },
    seconds: { type: "string", default: "5" },
    warmup: { type: "string", default: "1" },
    connections: { type: "string", default: "32" },
    repo: { type: "string", default: join(import.meta.dirname, "../..") },
    database: { type: "string", default: "taskmeter_growth" },
    keep: { type: "boolean", default: false },
    json: { type: "boolean", default: false }
  }
})
const SIZES = args.sizes.split(",").map(Number)
const ROUNDS = Number(args.rounds)
const SECONDS = Number(args.seconds)
const WARMUP = Number(args.warmup)
const CONNECTIONS = Number(args.connections)
if (
  SIZES.some((n) => !Number.isInteger(n) || n < 0) ||
  new Set(SIZES).size !== SIZES.length ||
  !(Number.isInteger(ROUNDS) && ROUNDS >= 1 && ROUNDS <= 20) ||
  !(SECONDS > 0 && SECONDS <= 60) ||
  !(WARMUP >= 0 && WARMUP <= 10) ||
  !(Number.isInteger(CONNECTIONS) && CONNECTIONS >= 1 && CONNECTIONS <= 256) ||
  !/^[a-z_][a-z0-9_]{0,40}$/.test(args.database)
) {
  throw new Error(
    "bench/growth: --sizes takes distinct whole numbers >= 0, --rounds 1..20, --seconds 0..60, --warmup 0..10, --connections 1..256, --database a lower-case name"
  )
}
/** The taskmeter whose server and worker run: this checkout, or another (`--repo /work/main` for a before figure). */
const BIN = join(resolve(args.repo), "packages/http/bin/taskmeter.ts")
const serverUrl =
  process.env.BENCH_DATABASE_URL ??
  process.env.DATABASE_URL ??
  process.env.TEST_DATABASE_URL ??
  "postgres://postgres@127.0.0.1:5432/test"
/** The database of one size. */
const databaseOf = (size: number) => `${args.database}_${size}`
const urlOf = (database: string) => {
  const url = new URL(serverUrl)
  url.pathname = `/${database}`
  return url.href
}
const NO_LIMIT = "1000000000"
const OPERATOR_TOKEN = randomUUID() + randomUUID()
const MODEL = "song-lyrics"
const BODY = Buffer.from(JSON.stringify({ model: MODEL, input: { prompt: "a song about a lighthouse keeper" } }))
/** How long a drain may take before the run gives up on it. */
const DRAIN_LIMIT_MS = 300_000
const UNFINISHED = "SELECT count(*) FROM tasks WHERE status IN ('queued', 'submitting', 'running')"
const CHORES = ["purge-idempotency-keys", "sweep-orphan-results", "remove-expired-files", "purge-webhook-log"]
const log = (line: string) => (args.json ? process.stderr : process.stdout).write(`${line}\n`)
const load = () => loadavg()[0]!

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

const dropDatabase = (database: string) =>
  onRoot((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).unprepared)

let cleaned: Promise<void> | undefined
const cleanup = () =>
  (cleaned ??= (async () => {
    await Promise.all([...children].map((child) => stop(child).catch(() => undefined)))
    if (!args.keep) {
      for (const size of SIZES) {
        await dropDatabase(databaseOf(size)).catch((error) =>
          console.error(`bench/growth: could not drop ${databaseOf(size)}:`, error)
        )
      }
    }
    await root.dispose().catch(() => undefined)
    await rm(dataDir, { recursive: true, force: true })
  })())
const abort = (reason: string) => {
  console.error(`bench/growth: ${reason}; cleaning up`)
  void cleanup().finally(() => process.exit(1))
}
process.once("SIGINT", () => abort("interrupted"))
process.once("SIGTERM", () => abort("terminated"))
// Bounds a hang: a millisecond per prefilled task, and 15 minutes per size and round.
const budgetMs = SIZES.reduce((total, size) => total + size + ROUNDS * 900_000, 0)
setTimeout(() => abort(`still running after ${Math.round(budgetMs / 1000)} s`), budgetMs).unref()

const env = (database: string, extra: Record<string, string>) => ({
  ...process.env,
  DATABASE_URL: urlOf(database),
  DATA_DIR: dataDir,
  SIMULATED_ENABLED: "true",
  OPERATOR_TOKEN,
  LOG_LEVEL: "Warning",
  ...extra
})

/** `taskmeter start` on free ports, without workers; resolves once both listeners are up. */
const startServer = async (
  database: string
): Promise<{ readonly child: ChildProcess; readonly url: URL; readonly adminUrl: string }> => {
  const started = await startTaskmeter(
    BIN,
    env(database, {
      HOST: "127.0.0.1",
      PORT: "0",
      ADMIN_PORT: "0",
      WORKERS: "false",
      SUBMISSIONS_PER_MINUTE: NO_LIMIT,
      MAX_UNFINISHED_TASKS: NO_LIMIT,
      KEY_RATE_LIMIT_PER_MINUTE: NO_LIMIT
    }),
    (child) => children.add(child)
  )
  return { ...started, url: new URL(started.url) }
}

/** `taskmeter admin ...` against the server's admin listener, its JSON answer. */
const admin = (adminUrl: string, command: ReadonlyArray<string>): Promise<any> =>
  taskmeterAdmin(BIN, ["--url", adminUrl, ...command], { ...process.env, TASKMETER_ADMIN_TOKEN: OPERATOR_TOKEN })

interface Created {
  readonly accountId: string
  readonly keyId: string
  readonly secret: string
}

const createAccount = async (adminUrl: string, name: string): Promise<Created> => {
  const created = await admin(adminUrl, ["account", "create", "--name", name, "--credits-usd", "1000000000"])
  return { accountId: created.account.id, keyId: created.key.key.id, secret: created.key.secret }
}

/** A new key of the prefilled big account: the bench keeps no secret in its databases. */
const createKey = async (adminUrl: string, accountId: string): Promise<string> =>
  (await admin(adminUrl, ["key", "create", "--account", accountId, "--name", `bench ${randomUUID().slice(0, 8)}`])).secret

/** A database of one size, prefilled (now or by an earlier run that kept it). */
interface Prepared {
  readonly size: number
  readonly database: string
  readonly bigAccountId: string
  /** Seconds of the prefill and of the VACUUM ANALYZE after it; undefined when reused. */
  readonly prefillSeconds: number | undefined
  readonly vacuumSeconds: number | undefined
  readonly bytesPerTask: number | undefined
  /** Bytes per prefilled task of each table (heap and TOAST) and each index. */
  readonly relations: Record<string, number>
}

/** A client of one database, for the bench's own statements. */
const connect = (database: string) => {
  const runtime = ManagedRuntime.make(PgStore.client({ url: urlOf(database), maxConnections: 2 }))
  const on = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) => runtime.runPromise(SqlClient.SqlClient.use(f))
  const rows = (query: string) => on((sql) => sql.unsafe<Record<string, unknown>>(query).unprepared)
  const first = (query: string) => rows(query).then((found) => Object.values(found[0]!)[0])
  return { runtime, on, rows, first, scalar: async (query: string) => Number(await first(query)) }
}

const TABLE_NAMES = ["tasks", "ledger_entries", "idempotency_keys", "results"].map((name) => `'${name}'`).join(", ")

const prepare = async (size: number): Promise<Prepared> => {
  const database = databaseOf(size)
  const exists = await onRoot((sql) => sql.unsafe(`SELECT 1 FROM pg_database WHERE datname = '${database}'`).unprepared)
  if (exists.length > 0) {
    const kept = connect(database)
    try {
      const done = await kept.rows(`SELECT big_account_id FROM bench_prefill WHERE tasks = ${size}`).catch(() => [])
      if (done.length > 0) {
        log(`  ${size.toLocaleString("en")} tasks: reusing ${database}, prefilled by an earlier run`)
        return {
          size,
          database,
          bigAccountId: String(done[0]!.big_account_id),
          ...(await measureSize(kept, size)),
          prefillSeconds: undefined,
          vacuumSeconds: undefined
        }
      }
    } finally {
      await kept.runtime.dispose()
    }
  }
  await dropDatabase(database)
  await onRoot((sql) => sql.unsafe(`CREATE DATABASE ${database}`).unprepared)
  const db = connect(database)
  try {
    await db.on((sql) => sql.unsafe("CREATE EXTENSION pg_walinspect").unprepared)
    // The server migrates the new database; the big account comes from its admin listener.
    const migrating = await startServer(database)
    const big = await createAccount(migrating.adminUrl, "big")
    await stop(migrating.child)

    const orderedIds = (await db.scalar(`SELECT count(*) FROM pg_proc WHERE proname = 'taskmeter_uuidv7'`)) > 0
    const started = performance.now()
    log(`  ${size.toLocaleString("en")} tasks, ${orderedIds ? "UUID v7" : "random v4"} ids: prefilling ${database}...`)
    await db.on((sql) =>
      prefill(sql, { bigAccountId: big.accountId, bigKeyId: big.keyId, tasks: size, orderedIds, at: new Date() }, (written) => {
        const seconds = (performance.now() - started) / 1000
        log(
          `    ${written.toLocaleString("en")} / ${size.toLocaleString("en")} tasks, ${seconds.toFixed(0)} s, load ${load().toFixed(2)}`
        )
      })
    )
    const prefillSeconds = (performance.now() - started) / 1000
    await db.on((sql) => sql.unsafe("VACUUM ANALYZE").unprepared)
    await db.on((sql) => sql.unsafe("CHECKPOINT").unprepared)
    const vacuumSeconds = (performance.now() - started) / 1000 - prefillSeconds
    log(`    prefilled in ${prefillSeconds.toFixed(0)} s, VACUUM ANALYZE and CHECKPOINT ${vacuumSeconds.toFixed(0)} s`)
    const measured = await measureSize(db, size)
    // Marks the prefill finished, for a later run with --keep to reuse.
    await db.on(
      (sql) =>
        sql.unsafe(
          `CREATE TABLE bench_prefill AS SELECT ${size}::bigint AS tasks, '${big.accountId}'::text AS big_account_id, now() AS at`
        ).unprepared
    )
    return { size, database, bigAccountId: big.accountId, prefillSeconds, vacuumSeconds, ...measured }
  } finally {
    await db.runtime.dispose()
  }
}

/** Bytes per prefilled task, in all and of each table (heap and TOAST) and each index. */
const measureSize = async (db: ReturnType<typeof connect>, size: number) => {
  const bytes = await db.scalar(`SELECT sum(pg_total_relation_size(name::regclass)) FROM unnest(ARRAY[${TABLE_NAMES}]) name`)
  const found = await db.rows(
    `SELECT c.relname AS name, pg_table_size(c.oid)::text AS bytes FROM pg_class c
     WHERE c.relname IN (${TABLE_NAMES}) AND c.relnamespace = 'public'::regnamespace
     UNION ALL
     SELECT i.relname, pg_relation_size(i.oid)::text FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
     JOIN pg_class t ON t.oid = x.indrelid
     WHERE t.relname IN (${TABLE_NAMES}) AND t.relnamespace = 'public'::regnamespace`
  )
  const relations = Object.fromEntries(
    found.map(({ bytes, name }) => [String(name), size === 0 ? 0 : Math.round(Number(bytes) / size)])
  )
  if (size > 0) {
    log(
      `    ${(bytes / 2 ** 20).toFixed(0)} MiB in the four tables, ${(bytes / size).toFixed(0)} B per task: ${Object.entries(
        relations
      )
        .map(([name, perTask]) => `${name} ${perTask}`)
        .join(", ")}`
    )
  }
  return { bytesPerTask: size === 0 ? undefined : bytes / size, relations }
}

/** A throughput with the 1-minute load average at the end of its window. */
interface Measured extends Rate {
  readonly load: number
}

/** One round's measures of one size. */
interface Row {
  readonly size: number
  readonly round: number
  /** Tasks in the database when the round began (the prefill and earlier rounds' admissions), as ANALYZE counts them. */
  readonly storedTasks: number
  /** Tasks admitted by this round (and drained by its worker). */
  readonly admitted: number
  readonly admissionBig: Measured
  readonly admissionSmall: Measured
  readonly poll: Measured
  readonly list: Measured
  readonly usage: Measured
  readonly summary: Measured
  readonly walBytesPerAdmission: number
  readonly fpiBytesPerAdmission: number
  /** Shared buffers found in (hit) and read into PostgreSQL's cache per admission, over the whole database. */
  readonly blocksPerAdmission: { readonly hit: number; readonly read: number }
  readonly plans: ReadonlyArray<Plan>
  readonly checkpointsDuringAdmission: number
  readonly drain: { readonly tasks: number; readonly seconds: number; readonly perSecond: number; readonly load: number }
  readonly housekeeping: Record<string, { readonly ms: number; readonly result: unknown }>
}

const round = async (prepared: Prepared, index: number): Promise<Row> => {
  const { database, size } = prepared
  const db = connect(database)
  try {
    // The statistics autovacuum would have by now (the rounds before admitted tasks; it may be off on a test server).
    await db.rows("ANALYZE")
    const storedTasks = await db.scalar("SELECT reltuples::bigint FROM pg_class WHERE oid = 'tasks'::regclass")
    log(
      `  round ${index + 1}, ${size.toLocaleString("en")} tasks (about ${storedTasks.toLocaleString("en")} stored), load ${load().toFixed(2)}`
    )
    const server = await startServer(database)
    const small = await createAccount(server.adminUrl, `small ${randomUUID().slice(0, 8)}`)
    const bigSecret = await createKey(server.adminUrl, prepared.bigAccountId)
    const window = { connections: CONNECTIONS, seconds: SECONDS, warmup: WARMUP }
    const measured = async (name: string, next: () => Request): Promise<Measured> => {
      const rate = await drive(server.url, window, next)
      const at = load()
      log(`    ${name}: ${rate.perSecond.toFixed(0)}/s, p99 ${rate.p99.toFixed(1)} ms, load ${at.toFixed(2)}`)
      return { ...rate, load: at }
    }
    let keys = 0
    const admit = (secret: string) => (): Request => ({
      method: "POST",
      path: "/api/v1/jobs",
      headers: {
        authorization: `Bearer ${secret}`,
        "content-type": "application/json",
        "idempotency-key": `growth-${randomUUID()}-${keys++}`
      },
      body: BODY,
      status: 202
    })
    // The flushed end of the WAL: pg_walinspect reads no further (an asynchronous commit may leave the insert position ahead).
    const lsn = () => db.first("SELECT pg_current_wal_flush_lsn()::text")
    const checkpoints = () => db.scalar("SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter")
    const walBefore = await lsn()
    const checkpointsBefore = await checkpoints()
    const unfinishedBefore = await db.scalar(UNFINISHED)
    const blocks = async () => {
      // Backends report their counters at most once a second.
      await new Promise((resolve) => setTimeout(resolve, 1500))
      const hit = await db.scalar(`SELECT blks_hit FROM pg_stat_database WHERE datname = current_database()`)
      const read = await db.scalar(`SELECT blks_read FROM pg_stat_database WHERE datname = current_database()`)
      return { hit, read }
    }
    const blocksBefore = await blocks()
    const admissionBig = await measured("admission, big account", admit(bigSecret))
    const admissionSmall = await measured("admission, fresh small account", admit(small.secret))
    const admitted = (await db.scalar(UNFINISHED)) - unfinishedBefore
    // The cluster's WAL holds every database's writes: only the records of this one's blocks count
    // (pg_walinspect), with their full-page images; commit records name no block and are left out.
    const walEnd = await lsn()
    // On a busy server the segments may be recycled before they are read: the WAL figures are then
    // left out (NaN) rather than the run lost.
    const walRead = async () => {
      const [wal] = await db.rows(
        `SELECT coalesce(sum(record_length), 0) AS bytes, coalesce(sum(fpi_length), 0) AS fpi
         FROM pg_get_wal_records_info('${walBefore}', '${walEnd}')
         WHERE block_ref LIKE '%/' || (SELECT oid FROM pg_database WHERE datname = current_database()) || '/%'`
      )
      // Full-page images by relation (of each record's first block): which pages were first touched since a checkpoint.
      const fpiByRelation = await db.rows(
        `SELECT coalesce(pg_filenode_relation(0, substring(block_ref FROM 'rel \\d+/\\d+/(\\d+)')::oid)::text, '?') AS relation,
           sum(fpi_length) AS bytes
         FROM pg_get_wal_records_info('${walBefore}', '${walEnd}')
         WHERE fpi_length > 0 AND block_ref LIKE '%/' || (SELECT oid FROM pg_database WHERE datname = current_database()) || '/%'
         GROUP BY 1 ORDER BY 2 DESC LIMIT 6`
      )
      return { wal: wal!, fpiByRelation }
    }
    const { wal, fpiByRelation } = await walRead().catch((error: unknown) => {
      log(`    WAL not read (${String((error as { cause?: unknown }).cause ?? error).slice(0, 120)})`)
      return { wal: { bytes: Number.NaN, fpi: Number.NaN }, fpiByRelation: [] }
    })
    const checkpointsDuringAdmission = (await checkpoints()) - checkpointsBefore
    const blocksAfter = await blocks()
    const per = (n: number) => n / Math.max(admitted, 1)
    const blocksPerAdmission = { hit: per(blocksAfter.hit - blocksBefore.hit), read: per(blocksAfter.read - blocksBefore.read) }
    const walBytesPerAdmission = per(Number(wal.bytes))
    const fpiBytesPerAdmission = per(Number(wal.fpi))
    log(
      `    per admission: ${walBytesPerAdmission.toFixed(0)} B of WAL (${fpiBytesPerAdmission.toFixed(0)} B full-page images), ` +
        `buffers ${blocksPerAdmission.hit.toFixed(1)} hit ${blocksPerAdmission.read.toFixed(1)} read; ${checkpointsDuringAdmission} checkpoints; ` +
        `images by relation: ${fpiByRelation.map(({ bytes, relation }) => `${relation} ${per(Number(bytes)).toFixed(0)} B`).join(", ")}`
    )

    const read = (path: string) =>
      ({ method: "GET", path, headers: { authorization: `Bearer ${bigSecret}` }, status: 200 }) as const
    // Poll: prefilled tasks of the big account at random, about 2,000 of them from a sample of pages
    // (the admitted ones when there are few).
    const percent = Math.min(100, (2_000_000 / Math.max(storedTasks, 1)) * 2)
    const ids = (
      await db.rows(
        storedTasks >= 100_000
          ? `SELECT id FROM tasks TABLESAMPLE SYSTEM (${percent}) WHERE account_id = '${prepared.bigAccountId}' LIMIT 2000`
          : `SELECT id FROM tasks WHERE account_id = '${prepared.bigAccountId}' ORDER BY random() LIMIT 2000`
      )
    ).map(({ id }) => String(id))
    let polled = 0
    const poll = await measured("poll by id", () => read(`/api/v1/jobs/${ids[polled++ % ids.length]}`))
    const list = await measured("list", () => read("/api/v1/jobs"))
    const usage = await measured("usage", () => read("/api/v1/usage"))
    const summary = await measured("usage summary", () => read("/api/v1/usage/summary"))
    await stop(server.child)
    const plans = await db.on((sql) => explain(sql, prepared.bigAccountId, ids[0]!))
    for (const plan of plans) {
      log(
        `    plan ${plan.statement}: ${plan.ms.toFixed(2)} ms, buffers ${plan.hit} hit ${plan.read} read, ${plan.indexes.join(", ")}`
      )
    }

    // Each housekeeping pass, once, in this process over the same stores the worker uses: what the
    // prefill (or the rounds before) left since the last pass.
    const housekeeping: Record<string, { ms: number; result: unknown }> = {}
    const stores = ManagedRuntime.make(
      Main.storage(dataDir, {
        ...Main.defaults,
        databaseUrl: Option.some(Redacted.make(urlOf(database))),
        databaseSchema: Option.none()
      })
    )
    try {
      const passes: Record<string, Effect.Effect<unknown, unknown, any>> = {
        purgeIdempotencyKeys: Housekeeping.purgeIdempotencyKeys(),
        sweepOrphanResults: Housekeeping.sweepOrphanResults(),
        removeExpiredFiles: Housekeeping.removeExpiredFiles(),
        purgeWebhookLog: Housekeeping.purgeWebhookLog()
      }
      for (const [name, pass] of Object.entries(passes)) {
        const at = performance.now()
        const result = await stores.runPromise(pass)
        housekeeping[name] = { ms: performance.now() - at, result }
        log(`    ${name}: ${housekeeping[name].ms.toFixed(0)} ms, ${JSON.stringify(result)}`)
      }
    } finally {
      await stores.dispose()
    }
    // The passes just ran: the worker below does not run them again while it drains.
    await db.rows(
      `INSERT INTO chores (name, taken_at) SELECT unnest(ARRAY[${CHORES.map((name) => `'${name}'`).join(", ")}]), now()
       ON CONFLICT (name) DO UPDATE SET taken_at = now()`
    )

    // The backlog: everything admitted above, drained by one worker process.
    const backlog = await db.scalar(UNFINISHED)
    const worker = spawn(process.execPath, [BIN, "worker"], { env: env(database, {}), stdio: ["ignore", "ignore", "inherit"] })
    children.add(worker)
    // Timed from the first task the worker finished (its start-up is not the drain) to the last.
    const spawned = performance.now()
    let drainStart: { readonly at: number; readonly left: number } | undefined
    for (;;) {
      const left = await db.scalar(UNFINISHED)
      if (drainStart === undefined && left < backlog) drainStart = { at: performance.now(), left }
      if (left === 0) break
      if (worker.exitCode !== null) throw new Error(`the worker exited with ${worker.exitCode}`)
      if (performance.now() - spawned > DRAIN_LIMIT_MS)
        throw new Error(`the worker left ${left} tasks after ${DRAIN_LIMIT_MS / 1000} s`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const drained = drainStart === undefined ? 0 : drainStart.left
    const drainSeconds = drainStart === undefined ? 0 : (performance.now() - drainStart.at) / 1000
    const drainLoad = load()
    await stop(worker)
    log(`    drain: ${drained} of ${backlog} tasks in ${drainSeconds.toFixed(1)} s after the first, load ${drainLoad.toFixed(2)}`)

    return {
      size,
      round: index + 1,
      storedTasks,
      admitted,
      admissionBig,
      admissionSmall,
      poll,
      list,
      usage,
      summary,
      walBytesPerAdmission,
      fpiBytesPerAdmission,
      blocksPerAdmission,
      plans,
      checkpointsDuringAdmission,
      drain: {
        tasks: drained,
        seconds: drainSeconds,
        perSecond: drainSeconds > 0 ? drained / drainSeconds : 0,
        load: drainLoad
      },
      housekeeping
    }
  } finally {
    await db.runtime.dispose()
  }
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
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
  ["purge keys ms", (row) => row.housekeeping.purgeIdempotencyKeys?.ms, false],
  ["orphan sweep ms", (row) => row.housekeeping.sweepOrphanResults?.ms, false],
  ["expiry ms", (row) => row.housekeeping.removeExpiredFiles?.ms, false],
  ["webhook log ms", (row) => row.housekeeping.purgeWebhookLog?.ms, false]
]

const format = (value: number) => value.toFixed(value < 10 ? 1 : 0)

try {
  log(
    `taskmeter growth benchmark: sizes ${SIZES.join(", ")}, ${ROUNDS} rounds; ${CONNECTIONS} connections, ${SECONDS} s per measure after ` +
      `${WARMUP} s warm-up; ${cpus().length} CPUs (${cpus()[0]?.model ?? "unknown"}), load average ` +
      `${loadavg()
        .map((n) => n.toFixed(2))
        .join(" ")}; server ${BIN}; PostgreSQL at ${serverUrl.replace(/\/\/[^@]*@/, "//")}`
  )
  const prepared: Array<Prepared> = []
  for (const size of SIZES) prepared.push(await prepare(size))
  const rows: Array<Row> = []
  for (let index = 0; index < ROUNDS; index++) {
    for (const p of prepared) rows.push(await round(p, index))
  }
  const baseline = (row: Row) => rows.find((other) => other.size === 0 && other.round === row.round)
  log("")
  log(`Median of ${ROUNDS} rounds; ratios: the median of each round's ratio to the empty database measured in the same round.`)
  log(`| stored tasks | prefill s | B/task on disk | ${columns.map(([name]) => name).join(" | ")} | load (1 min) |`)
  log(`|${"---|".repeat(columns.length + 4)}`)
  for (const p of prepared) {
    const mine = rows.filter((row) => row.size === p.size)
    const cells = columns.map(([, of, ratio]) => {
      const values = mine.map(of).filter((value): value is number => value !== undefined)
      if (values.length === 0) return "-"
      const ratios = mine.flatMap((row) => {
        const base = baseline(row)
        const value = of(row)
        return ratio && p.size !== 0 && base !== undefined && value !== undefined ? [value / of(base)!] : []
      })
      return ratios.length > 0 ? `${format(median(values))} (${median(ratios).toFixed(2)}x)` : format(median(values))
    })
    const loads = mine.flatMap((row) =>
      [row.admissionBig, row.admissionSmall, row.poll, row.list, row.usage, row.summary].map((m) => m.load)
    )
    log(
      `| ${p.size.toLocaleString("en")} | ${p.prefillSeconds === undefined ? "kept" : `${p.prefillSeconds.toFixed(0)} + ${p.vacuumSeconds!.toFixed(0)}`} | ` +
        `${p.bytesPerTask === undefined ? "-" : p.bytesPerTask.toFixed(0)} | ${cells.join(" | ")} | ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)} |`
    )
  }
  log(
    `(checkpoints during admission: ${rows.map((row) => `${row.size}/${row.round}: ${row.checkpointsDuringAdmission}`).join(", ")})`
  )
  if (args.json) {
    process.stdout.write(
      `${JSON.stringify({
        machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, loadAverage: loadavg() },
        connections: CONNECTIONS,
        seconds: SECONDS,
        rounds: ROUNDS,
        server: BIN,
        prepared,
        rows
      })}\n`
    )
  }
} finally {
  await cleanup()
}
