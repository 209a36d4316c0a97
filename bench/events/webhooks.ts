/**
 * Webhook deliveries per second on PostgreSQL: `--deliveries` tasks settle with one endpoint
 * subscribed (raising one delivery each, written by the settling statement), then `--loops`
 * delivery loops of this process (each claiming up to `--concurrency` at a time, as one worker
 * process's WebhookDelivery.run does) post them, signed, to a local receiver answering 200; the
 * figure is deliveries recorded as delivered per second of wall time. Loopback is allowed here
 * only (AddressPolicy.allowLoopbackForTests).
 * Usage: node bench/events/webhooks.ts [--deliveries 10000] [--concurrency 64] [--loops 2]
 * with BENCH_DATABASE_URL or TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test).
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { randomUUID } from "node:crypto"
import { cpus } from "node:os"
import { parseArgs } from "node:util"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import {
  AccountStore,
  AddressPolicy,
  Ids,
  LedgerStore,
  Mailer,
  Money,
  PublicFetch,
  TaskStore,
  WebhookDelivery,
  WebhookStore
} from "@taskmeter/kernel"
import { PgStore } from "@taskmeter/storage-pg"

const { values: args } = parseArgs({
  options: {
    deliveries: { type: "string", default: "10000" },
    concurrency: { type: "string", default: "64" },
    loops: { type: "string", default: "2" }
  }
})

const url = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const DELIVERIES = Number(args.deliveries)
const CONCURRENCY = Number(args.concurrency)
const LOOPS = Number(args.loops)
const PRICE = Money.micros(1_000)
const BATCH = 500

let received = 0
const receiver = createServer((request, response) => {
  request.resume()
  request.on("end", () => {
    received++
    response.writeHead(200).end("ok")
  })
})
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`

/** Admits and settles `count` tasks of the account, `BATCH` at a time. */
const settle = (accountId: Ids.AccountId, count: number) =>
  Effect.gen(function* () {
    const store = yield* TaskStore.TaskStore
    for (let done = 0; done < count; done += BATCH) {
      const now = new Date()
      const size = Math.min(BATCH, count - done)
      yield* Effect.forEach(
        Array.from({ length: size }, () => Ids.makeTaskId()),
        (id) =>
          store.admit({
            task: {
              id,
              accountId,
              apiKeyId: null,
              model: "song-lyrics",
              input: { prompt: "a song" },
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
          }),
        { concurrency: 64, discard: true }
      )
      const claims = yield* store.claim({ workerId: "bench", limit: size, leaseMs: 600_000, now })
      const lease = (claim: TaskStore.Claim) => ({ taskId: claim.task.id, leaseToken: claim.leaseToken, now })
      yield* store.transitionAll(claims.map((c) => ({ ...lease(c), from: "queued", to: "submitting", keepLease: true })))
      yield* store.transitionAll(
        claims.map((c) => ({ ...lease(c), from: "submitting", to: "succeeded", keepLease: false, chargeMicros: PRICE }))
      )
    }
  })

const delivered = SqlClient.SqlClient.use(
  (sql) => sql<{ readonly n: number }>`SELECT count(*)::integer AS n FROM webhook_deliveries WHERE status = 'delivered'`
).pipe(Effect.map((rows) => rows[0]?.n ?? 0))

const schema = `bench_webhooks_${randomUUID().replaceAll("-", "").slice(0, 12)}`

const program = Effect.gen(function* () {
  const accounts = yield* AccountStore.AccountStore
  const account = yield* accounts.createAccount({ id: Ids.makeAccountId(), name: "bench", createdAt: new Date() })
  yield* (yield* LedgerStore.LedgerStore).grant({ accountId: account.id, amountMicros: Money.micros(1e12), note: "bench" })
  yield* (yield* WebhookStore.WebhookStore).createEndpoint({
    id: `whep_${randomUUID()}`,
    accountId: account.id,
    url: receiverUrl,
    events: ["task.succeeded"],
    secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    now: new Date()
  })
  const setupStarted = Date.now()
  yield* settle(account.id, DELIVERIES)
  console.log(`settled ${DELIVERIES} tasks (one pending delivery each) in ${((Date.now() - setupStarted) / 1000).toFixed(1)} s`)
  // One pool of connections per loop, as each worker process's WebhookDelivery.run keeps one.
  const options = (pool: PublicFetch.Pool) => ({
    concurrency: CONCURRENCY,
    disableAfterMs: WebhookDelivery.DEFAULT_DISABLE_AFTER_MS,
    pool
  })
  const started = Date.now()
  const loop = Effect.scoped(
    Effect.gen(function* () {
      const pool = yield* PublicFetch.makePool()
      while ((yield* WebhookDelivery.deliverDue(options(pool))) > 0) {}
    })
  )
  yield* Effect.all(
    Array.from({ length: LOOPS }, () => loop),
    { concurrency: "unbounded" }
  )
  const seconds = (Date.now() - started) / 1000
  const count = yield* delivered
  console.log(
    JSON.stringify({
      deliveries: count,
      received,
      seconds: Number(seconds.toFixed(2)),
      perSecond: Math.round(count / seconds),
      loops: LOOPS,
      concurrency: CONCURRENCY,
      cores: cpus().length
    })
  )
  if (count !== DELIVERIES) throw new Error(`${DELIVERIES - count} deliveries were not delivered`)
})

const dropSchema = SqlClient.SqlClient.use((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`).pipe(
  Effect.provide(PgStore.client({ url, maxConnections: 1 })),
  Effect.orDie
)

await Effect.runPromise(
  program.pipe(
    Effect.provide(
      Layer.mergeAll(
        PgStore.layer({ url, schema, maxConnections: 16, listen: false }),
        Layer.succeed(AddressPolicy.AddressPolicy, { ...AddressPolicy.publicOnly, allowLoopbackForTests: true }),
        Mailer.layerMemory()
      )
    ),
    Effect.ensuring(dropSchema)
  )
)
receiver.close()
