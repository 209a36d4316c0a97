/**
 * The event-stream benchmark on PostgreSQL, in a fresh schema: `--streams` GET
 * /api/v1/jobs/{id}/events held open at once on one server process (`npm start`'s, no workers),
 * one task each, while this process plays the worker and moves every task queued → submitting →
 * running → succeeded in batches; latency is from the start of the move's write to the event's
 * arrival here (so it includes the write, the NOTIFY, the server's read and the stream), p50/p99/max.
 * Then what opening a stream costs in the store (TaskStore.holdStream: take and give back a slot),
 * and the cost of the status NOTIFYs: `TaskStore.admit` rate at `--connections`, and the mover's
 * rate, while a mover moves tasks through their statuses on a store that NOTIFYs (as the servers
 * do), on one that does not, and on the first with an endpoint of the account subscribed to
 * `task.running` (a delivery written with each move to running); the movers take turns in an order
 * that rotates every round, each after a window with no mover; per-round medians over `--rounds`.
 * Usage: node bench/events/sse.ts [--streams 1000] [--batch 10] [--rate 200] [--seconds 4] [--rounds 4] [--slot-samples 1000]
 */
import { spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { randomUUID } from "node:crypto"
import { once } from "node:events"
import { mkdtemp, rm } from "node:fs/promises"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { parseArgs } from "node:util"
import { Effect, Exit, Layer, ManagedRuntime, Option, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { Accounts, Ids, Money, Pricer, TaskStore, WebhookStore } from "@taskmeter/kernel"
import type { TaskStatus } from "@taskmeter/kernel"
import { Simulated } from "@taskmeter/providers"
import { PgStore } from "@taskmeter/storage-pg"
import { Main } from "@taskmeter/http"
import { summarize } from "../support/percentile.ts"

const { values: args } = parseArgs({
  options: {
    streams: { type: "string", default: "1000" },
    batch: { type: "string", default: "10" },
    rate: { type: "string", default: "200" },
    connections: { type: "string", default: "8" },
    seconds: { type: "string", default: "4" },
    rounds: { type: "string", default: "4" },
    "slot-samples": { type: "string", default: "1000" }
  }
})
const STREAMS = Number(args.streams)
const BATCH = Number(args.batch)
const RATE = Number(args.rate)
const CONNECTIONS = Number(args.connections)
const SECONDS = Number(args.seconds)
const ROUNDS = Number(args.rounds)
const SLOT_SAMPLES = Number(args["slot-samples"])
const databaseUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const MODEL = "song-lyrics"
const INPUT = { prompt: "a song about a lighthouse keeper" }
const NO_LIMIT = 1_000_000_000
const SERVER = join(import.meta.dirname, "../../packages/http/bin/start.ts")
const schema = `bench_sse_${randomUUID().replaceAll("-", "").slice(0, 16)}`

const benchDir = await mkdtemp(join(tmpdir(), "taskmeter-bench-sse-"))
const serverDir = await mkdtemp(join(tmpdir(), "taskmeter-bench-sse-server-"))
const settings: Main.Settings = {
  ...Main.defaults,
  databaseUrl: Option.some(Redacted.make(databaseUrl)),
  databaseSchema: Option.some(schema),
  workers: false
}
const kernel = ManagedRuntime.make(
  Main.kernel({
    settings,
    adapters: [Simulated.make({ models: [MODEL] })],
    mediaUrls: { baseUrl: "http://127.0.0.1", secret: Redacted.make(randomUUID() + randomUUID()) },
    pricesFile: Main.pricesFileOf(benchDir)
  }).pipe(Layer.provideMerge(Main.storage(benchDir, settings)))
)
/** The mover's stores: one that NOTIFYs status changes (as the server's processes do), one that does not. */
const notifying = ManagedRuntime.make(PgStore.layer({ url: databaseUrl, schema, maxConnections: 4 }))
const silent = ManagedRuntime.make(PgStore.layer({ url: databaseUrl, schema, maxConnections: 4, listen: false }))
const admin = ManagedRuntime.make(PgStore.client({ url: databaseUrl, maxConnections: 1 }))

let server: ChildProcess | undefined
const cleanup = async () => {
  if (server !== undefined && server.exitCode === null) {
    const exited = once(server, "exit")
    server.kill("SIGTERM")
    await exited
  }
  for (const runtime of [kernel, notifying, silent]) await runtime.dispose().catch(() => undefined)
  await admin
    .runPromise(SqlClient.SqlClient.use((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`))
    .catch(() => undefined)
  await admin.dispose()
  await rm(benchDir, { recursive: true, force: true })
  await rm(serverDir, { recursive: true, force: true })
}
setTimeout(() => {
  console.error("bench/events/sse: still running after 10 minutes; cleaning up")
  void cleanup().finally(() => process.exit(1))
}, 600_000).unref()

const startServer = (): Promise<string> => {
  server = spawn(process.execPath, [SERVER], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      DATABASE_SCHEMA: schema,
      HOST: "127.0.0.1",
      PORT: "0",
      ADMIN_PORT: "0",
      DATA_DIR: serverDir,
      WORKERS: "false",
      SIMULATED_ENABLED: "true",
      SSE_MAX_STREAMS_PER_ACCOUNT: String(STREAMS * 2),
      ACCESS_LOG: "false"
    },
    stdio: ["ignore", "pipe", "inherit"]
  })
  const child = server
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const match = /listening on (http:\/\/\S+)/.exec(line)
      if (match !== null) resolve(match[1]!)
    })
    child.once("exit", (code) => reject(new Error(`the server exited with ${code} before listening`)))
  })
}

try {
  const { caller, quote, tasks } = await kernel.runPromise(
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const created = yield* accounts.create({ name: "bench", credits: Money.micros(1_000_000_000_000) })
      return {
        caller: { ...(yield* accounts.authenticate(created.key.secret)), secret: created.key.secret },
        quote: yield* (yield* Pricer.Pricer).quote(MODEL, INPUT),
        tasks: yield* TaskStore.TaskStore
      }
    })
  )
  const admit = () => {
    const now = Date.now()
    const id = Ids.makeTaskId()
    return Effect.runPromise(
      tasks.admit({
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
          deadlineAt: new Date(now + 3_600_000)
        },
        idempotencyKey: id,
        fingerprint: id,
        idempotencyExpiresAt: new Date(now + 86_400_000),
        limits: { submissionsPerMinute: NO_LIMIT, maxUnfinishedTasks: NO_LIMIT, keyUsageLimit: null }
      })
    ).then((result) => {
      if (result._tag !== "Admitted") throw new Error(`admission refused: ${result._tag}`)
      return id
    })
  }

  /** Claims up to `limit` tasks and moves each along the status machine, one step per batch write. */
  const mover = (store: TaskStore.TaskStore["Service"]) => {
    const path: ReadonlyArray<TaskStatus.TaskStatus> = ["queued", "submitting", "running", "succeeded"]
    return {
      claim: (limit: number) => Effect.runPromise(store.claim({ workerId: "bench", limit, leaseMs: 600_000, now: new Date() })),
      step: async (
        claims: ReadonlyArray<TaskStore.Claim>,
        step: number,
        onWrite?: (id: string, started: number, returned: number) => void
      ) => {
        const at = performance.now()
        const results = await Effect.runPromise(
          store.transitionAll(
            claims.map((claim) => ({
              taskId: claim.task.id,
              leaseToken: claim.leaseToken,
              from: path[step - 1]!,
              to: path[step]!,
              now: new Date(),
              keepLease: step < 3,
              ...(step === 3 ? { chargeMicros: claim.task.priceMicros, assets: [] } : {})
            }))
          )
        )
        if (results.some((result) => result._tag !== "Done")) throw new Error("a move did not land")
        const returned = performance.now()
        for (const claim of claims) onWrite?.(claim.task.id, at, returned)
      }
    }
  }

  const url = await startServer()
  console.log(
    `taskmeter event-stream benchmark: ${STREAMS} streams on one server process, ${cpus().length} CPUs ` +
      `(${cpus()[0]?.model ?? "unknown"}), load average ${loadavg()[0]!.toFixed(2)}, PostgreSQL at ${databaseUrl.replace(/\/\/[^@]*@/, "//")}`
  )

  // Phase 1: the streams and the latency of a status change.
  const ids: Array<string> = []
  for (let i = 0; i < STREAMS; i += 50) ids.push(...(await Promise.all(Array.from({ length: Math.min(50, STREAMS - i) }, admit))))
  const arrivals = new Map<string, number>()
  let opened = 0
  const streams = ids.map(async (id) => {
    const response = await fetch(`${url}/api/v1/jobs/${id}/events`, { headers: { authorization: `Bearer ${caller.secret}` } })
    if (response.status !== 200) throw new Error(`stream ${id} answered ${response.status}`)
    const decoder = new TextDecoder()
    let buffer = ""
    for await (const chunk of response.body!) {
      buffer += decoder.decode(chunk, { stream: true })
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const sequence = /^id: (\d)$/mu.exec(block)?.[1]
        if (sequence === "1") opened++
        else if (sequence !== undefined) arrivals.set(`${id} ${sequence}`, performance.now())
      }
    }
  })
  const openedAt = performance.now()
  while (opened < STREAMS) await new Promise((resolve) => setTimeout(resolve, 20))
  console.log(`${STREAMS} streams open, each with its first event, in ${((performance.now() - openedAt) / 1000).toFixed(1)} s`)

  const { claim, step } = mover(tasks)
  const claims: Array<TaskStore.Claim> = []
  while (claims.length < STREAMS) claims.push(...(await claim(Math.min(100, STREAMS - claims.length))))
  const written = new Map<string, number>()
  const committed = new Map<string, number>()
  const sequences = ["", "2", "3", "5"]
  const moveStart = performance.now()
  // Paced: one batch every BATCH / RATE seconds, so that the figure is a latency, not a backlog.
  let due = moveStart
  for (let s = 1; s <= 3; s++) {
    for (let i = 0; i < claims.length; i += BATCH) {
      due += (BATCH / RATE) * 1000
      await step(claims.slice(i, i + BATCH), s, (id, started, returned) => {
        written.set(`${id} ${sequences[s]}`, started)
        committed.set(`${id} ${sequences[s]}`, returned)
      })
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())))
    }
  }
  const moveSeconds = (performance.now() - moveStart) / 1000
  await Promise.all(streams)
  const latencies = [...written].map(([key, at]) => (arrivals.get(key) ?? Number.NaN) - at)
  // A status the task had already left when its stream read it is not sent (by design); a final never fails to come.
  const skipped = latencies.filter(Number.isNaN).length
  const finals = ids.filter((id) => arrivals.has(`${id} 5`)).length
  const latency = summarize(latencies.filter((ms) => !Number.isNaN(ms)))
  const afterCommit = summarize(
    [...committed].map(([key, at]) => (arrivals.get(key) ?? Number.NaN) - at).filter((ms) => !Number.isNaN(ms))
  )
  console.log(
    `status changes: ${written.size} in ${moveSeconds.toFixed(1)} s (${(written.size / moveSeconds).toFixed(0)}/s, batches of ${BATCH}); ` +
      `write start to event: p50 ${latency.p50.toFixed(1)} ms, p99 ${latency.p99.toFixed(1)} ms, max ${latency.max.toFixed(1)} ms ` +
      `over ${latency.count} events; ${skipped} passed over; final events ${finals}/${ids.length}`
  )
  console.log(
    `  from the write's return (commit) to event: p50 ${afterCommit.p50.toFixed(1)} ms, p99 ${afterCommit.p99.toFixed(1)} ms, max ${afterCommit.max.toFixed(1)} ms`
  )

  // Phase 2: the cost of a stream's slot (TaskStore.holdStream: take, then give back), one at a time.
  const slotTimes = await notifying.runPromise(
    Effect.gen(function* () {
      const store = yield* TaskStore.TaskStore
      const take: Array<number> = []
      const give: Array<number> = []
      const read: Array<number> = []
      for (let i = 0; i < SLOT_SAMPLES; i++) {
        // One plain round trip beside each, for scale: reading a task by id.
        const before = performance.now()
        yield* store.get(caller.accountId, ids[i % ids.length]! as Ids.TaskId)
        read.push(performance.now() - before)
        const scope = yield* Scope.make()
        const started = performance.now()
        if (!(yield* Scope.provide(store.holdStream(caller.accountId, STREAMS * 2), scope))) throw new Error("no stream slot")
        const taken = performance.now()
        yield* Scope.close(scope, Exit.void)
        take.push(taken - started)
        give.push(performance.now() - taken)
      }
      return { take: summarize(take), give: summarize(give), read: summarize(read) }
    })
  )
  console.log(
    `stream slot (holdStream, ${SLOT_SAMPLES} one at a time): take p50 ${slotTimes.take.p50.toFixed(2)} ms, p99 ${slotTimes.take.p99.toFixed(2)} ms; ` +
      `give back p50 ${slotTimes.give.p50.toFixed(2)} ms, p99 ${slotTimes.give.p99.toFixed(2)} ms; ` +
      `beside them, a task read by id p50 ${slotTimes.read.p50.toFixed(2)} ms, p99 ${slotTimes.read.p99.toFixed(2)} ms`
  )

  // Phase 3: admission while statuses change, with and without the status NOTIFYs, and with a
  // task.running subscription. The mover conditions take turns in an order rotated every round,
  // each after a window with no mover, so none always follows the same one; per-round medians.
  type Condition = "no mover" | "mover, NOTIFY on" | "mover, NOTIFY off" | "mover, running hooked"
  const movers: ReadonlyArray<Condition> = ["mover, NOTIFY on", "mover, NOTIFY off", "mover, running hooked"]
  const conditions: ReadonlyArray<Condition> = ["no mover", ...movers]
  const stores = {
    on: await notifying.runPromise(TaskStore.TaskStore),
    off: await silent.runPromise(TaskStore.TaskStore)
  }
  // Enabled only for "mover, running hooked": each move to running then writes its delivery (none is sent).
  const webhooks = await notifying.runPromise(WebhookStore.WebhookStore)
  const hook = await Effect.runPromise(
    webhooks.createEndpoint({
      id: `whep_${randomUUID()}`,
      accountId: caller.accountId,
      url: "https://hooks.example.com/running",
      events: ["task.running"],
      secret: "whsec_bench",
      now: new Date()
    })
  )
  const hooked = (enabled: boolean) =>
    Effect.runPromise(webhooks.updateEndpoint(caller.accountId, hook.id, { enabled, now: new Date() }))
  await hooked(false)
  const rates = new Map<Condition, Array<number>>(conditions.map((c) => [c, []]))
  const moveRates = new Map<Condition, Array<number>>(conditions.map((c) => [c, []]))
  const loads: Array<number> = []
  for (let round = 0; round < ROUNDS; round++) {
    const order = movers.map((_, i) => movers[(i + round) % movers.length]!)
    for (const condition of order.flatMap((mover) => ["no mover" as const, mover])) {
      await hooked(condition === "mover, running hooked")
      const end = performance.now() + SECONDS * 1000
      let admitted = 0
      let moved = 0
      const loops = Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() < end) {
          await admit()
          admitted++
        }
      })
      const move =
        condition === "no mover"
          ? Promise.resolve()
          : (async () => {
              const { claim, step } = mover(condition === "mover, NOTIFY off" ? stores.off : stores.on)
              while (performance.now() < end) {
                const batch = await claim(BATCH)
                for (let s = 1; s <= 3 && batch.length > 0; s++) await step(batch, s)
                moved += batch.length * 3
              }
            })()
      await Promise.all([...loops, move])
      rates.get(condition)!.push(admitted / SECONDS)
      moveRates.get(condition)!.push(moved / SECONDS)
    }
    loads.push(loadavg()[0]!)
  }
  const median = (values: ReadonlyArray<number>) => {
    const sorted = [...values].sort((a, b) => a - b)
    const middle = Math.floor(sorted.length / 2)
    return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
  }
  console.log(
    `admission (TaskStore.admit, ${CONNECTIONS} at a time), ${ROUNDS} rounds of ${SECONDS} s per condition, movers alternated; ` +
      `load average after each round: ${loads.map((l) => l.toFixed(2)).join(", ")}; per-round medians:`
  )
  for (const condition of conditions) {
    const perRound = rates.get(condition)!
    const moves = moveRates.get(condition)!
    console.log(
      `  ${condition.padEnd(21)} ${median(perRound).toFixed(0).padStart(6)} admits/s (windows: ${perRound.map((r) => r.toFixed(0)).join(", ")})` +
        (condition === "no mover"
          ? ""
          : `; ${median(moves).toFixed(0)} status moves/s (rounds: ${moves.map((r) => r.toFixed(0)).join(", ")})`)
    )
  }
} finally {
  await cleanup()
}
