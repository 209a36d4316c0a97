/**
 * The task queue benchmark on PostgreSQL, per worker count in a fresh schema: drain throughput
 * (tasks admitted first, then the worker processes of worker.ts start together; tasks/s to the last
 * task succeeded and charged) and queue latency (tasks admitted one at a time at `--rate`, admission
 * to claim, p50 and p99); then every task must be charged exactly its price.
 * Usage and options: bench/runner/README.md; results: bench/RESULTS.md.
 */
import { spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { once } from "node:events"
import { randomUUID } from "node:crypto"
import { cpus } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { parseArgs } from "node:util"
import { Effect, Layer, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import { AccountStore, Ids, LedgerStore, Money, TaskStore } from "@taskmeter/kernel"
import { PgStore } from "@taskmeter/storage-pg"
import { percentile } from "../support/percentile.ts"

const { values: args } = parseArgs({
  options: {
    tasks: { type: "string", default: "20000" },
    workers: { type: "string", default: "1,4" },
    "latency-tasks": { type: "string", default: "2000" },
    rate: { type: "string", default: "200" },
    model: { type: "string", default: "song-lyrics" },
    "max-tasks": { type: "string", default: "256" },
    "claim-batch": { type: "string", default: "100" }
  }
})

const url = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const TASKS = Number(args.tasks)
const LATENCY_TASKS = Number(args["latency-tasks"])
const RATE = Number(args.rate)
const MODEL = args.model
const PRICE = Money.micros(1_000)
const WORKER = join(import.meta.dirname, "worker.ts")
/** Extra node flags for the worker processes, e.g. BENCH_WORKER_NODE_ARGS="--cpu-prof" to profile them. */
const nodeArgs = (process.env.BENCH_WORKER_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "")

const admit = (accountId: Ids.AccountId) =>
  Effect.gen(function* () {
    const store = yield* TaskStore.TaskStore
    const now = new Date()
    const id = Ids.makeTaskId()
    const result = yield* store.admit({
      task: {
        id,
        accountId,
        apiKeyId: null,
        model: MODEL,
        input: { prompt: `a song about task ${id}` },
        priceMicros: PRICE,
        unitMicros: PRICE,
        quantity: 1,
        settlement: "fixed",
        createdAt: now,
        deadlineAt: new Date(now.getTime() + 3_600_000)
      },
      idempotencyKey: id,
      fingerprint: id,
      idempotencyExpiresAt: new Date(now.getTime() + 86_400_000),
      limits: { submissionsPerMinute: 1e9, maxUnfinishedTasks: 1e9, keyUsageLimit: null }
    })
    if (result._tag !== "Admitted") throw new Error(`admission refused: ${result._tag}`)
    return { id, admittedAt: Date.now() }
  })

interface Worker {
  readonly child: ChildProcess
  readonly lines: AsyncIterator<string>
}

const startWorker = async (schema: string, index: number): Promise<Worker> => {
  const child = spawn(process.execPath, [...nodeArgs, WORKER], {
    env: {
      ...process.env,
      DATABASE_URL: url,
      SCHEMA: schema,
      MODELS: MODEL,
      WORKER_ID: `bench-${index}`,
      MAX_TASKS: args["max-tasks"],
      CLAIM_BATCH: args["claim-batch"]
    },
    stdio: ["pipe", "pipe", "inherit"]
  })
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]()
  const first = await lines.next()
  if (first.value !== "ready") throw new Error(`worker ${index} did not start`)
  return { child, lines }
}

const runOnce = async (workers: number) => {
  const schema = `bench_${randomUUID().replaceAll("-", "").slice(0, 16)}`
  const stores = PgStore.layerClient({ schema, channel: `taskmeter_work_${schema}` }).pipe(
    Layer.provideMerge(PgStore.client({ url, schema, maxConnections: 16 }))
  )
  const runtime = ManagedRuntime.make(stores)
  const run = <A, E>(effect: Effect.Effect<A, E, PgStore.Stores | SqlClient.SqlClient>) => runtime.runPromise(effect)
  const finished = () =>
    run(
      SqlClient.SqlClient.use(
        (sql) => sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM tasks WHERE status IN ('succeeded', 'failed')`
      )
    ).then((rows) => rows[0]!.n)
  const waitFinished = async (count: number) => {
    while ((await finished()) < count) await new Promise((resolve) => setTimeout(resolve, 50))
    return Date.now()
  }
  const processes: Array<Worker> = []
  try {
    const accountId = await run(
      Effect.gen(function* () {
        const account = yield* (yield* AccountStore.AccountStore).createAccount({
          id: Ids.makeAccountId(),
          name: "bench",
          createdAt: new Date()
        })
        yield* (yield* LedgerStore.LedgerStore).grant({
          accountId: account.id,
          amountMicros: Money.micros(1_000_000_000_000),
          note: "bench credits"
        })
        return account.id
      })
    )

    const admitStart = Date.now()
    await run(Effect.forEach(Array.from({ length: TASKS }), () => admit(accountId), { concurrency: 32, discard: true }))
    const admissionRate = TASKS / ((Date.now() - admitStart) / 1000)

    for (let i = 0; i < workers; i++) processes.push(await startWorker(schema, i))
    const start = Date.now()
    for (const worker of processes) worker.child.stdin!.write("go\n")
    const end = await waitFinished(TASKS)
    const throughput = TASKS / ((end - start) / 1000)

    const latencyStart = Date.now()
    const admitted: Array<{ readonly id: string; readonly admittedAt: number }> = []
    for (let i = 0; i < LATENCY_TASKS; i++) {
      const due = latencyStart + (i * 1000) / RATE
      const wait = due - Date.now()
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
      admitted.push(await run(admit(accountId)))
    }
    await waitFinished(TASKS + LATENCY_TASKS)

    const claimedAt = new Map<string, number>()
    for (const worker of processes) {
      worker.child.stdin!.write("report\n")
      const line = await worker.lines.next()
      for (const [id, at] of (JSON.parse(line.value as string) as { claims: Array<[string, number]> }).claims) {
        claimedAt.set(id, at)
      }
    }
    const latencies = admitted.map((task) => claimedAt.get(task.id)! - task.admittedAt).sort((a, b) => a - b)

    const books = await run(
      Effect.gen(function* () {
        const balances = yield* (yield* LedgerStore.LedgerStore).balances(accountId)
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{
          readonly n: number
        }>`SELECT count(*)::int AS n FROM tasks WHERE status = 'succeeded' AND charged_micros = ${PRICE}`
        return { balances, succeeded: rows[0]!.n }
      })
    )
    const total = TASKS + LATENCY_TASKS
    const charged = 1_000_000_000_000 - (books.balances?.balanceMicros ?? NaN)
    if (books.succeeded !== total || charged !== total * PRICE || books.balances?.reservedMicros !== 0) {
      throw new Error(`books do not add up: ${JSON.stringify({ ...books, charged, expected: total * PRICE })}`)
    }
    return { workers, throughput, admissionRate, latencies }
  } finally {
    await Promise.all(
      processes.map(async ({ child }) => {
        const exited = once(child, "exit")
        child.kill("SIGTERM")
        await exited
      })
    )
    await run(SqlClient.SqlClient.use((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`)).catch(() => undefined)
    await runtime.dispose()
  }
}

console.log(
  `taskmeter queue benchmark: ${TASKS} tasks of ${MODEL} per run, ${cpus().length} CPUs, PostgreSQL at ${url.replace(/\/\/[^@]*@/, "//")}`
)
console.log("workers | drain tasks/s | admission tasks/s | latency p50 ms | latency p99 ms | latency max ms")
for (const workers of args.workers.split(",").map(Number)) {
  const result = await runOnce(workers)
  console.log(
    [
      String(workers).padStart(7),
      result.throughput.toFixed(0).padStart(13),
      result.admissionRate.toFixed(0).padStart(17),
      percentile(result.latencies, 50).toFixed(1).padStart(14),
      percentile(result.latencies, 99).toFixed(1).padStart(14),
      percentile(result.latencies, 100).toFixed(1).padStart(14)
    ].join(" | ")
  )
}
