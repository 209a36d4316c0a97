/**
 * A worker process for callbackRecovery.test.ts: TaskWorker.run on PostgreSQL with the real song
 * adapter against the test's fake upstream, callbacks on (PUBLIC_URL, SECRET as the server has
 * them), until it is killed. Configured by environment variables; prints "ready" once started.
 */
import { Effect, Layer, Redacted } from "effect"
import { BlobStore, CallbackUrls, Catalog, Executors, MediaUrls, TaskWorker } from "@taskmeter/kernel"
import { Song } from "@taskmeter/providers"
import { PgStore } from "@taskmeter/storage-pg"

const env = (name: string): string => {
  const value = process.env[name]
  if (value === undefined) throw new Error(`CallbackWorkerProcess: ${name} is not set`)
  return value
}

const links = { baseUrl: env("PUBLIC_URL"), secret: Redacted.make(env("SECRET")) }

const services = Layer.mergeAll(
  PgStore.layer({ url: env("DATABASE_URL"), schema: env("SCHEMA"), maxConnections: 4 }),
  BlobStore.layerFileSystem(env("BLOB_DIR")),
  Catalog.layer,
  Executors.layer({ adapters: [Song.make({ apiKey: "test-key", baseUrl: env("UPSTREAM_URL") })] }),
  MediaUrls.layer(links),
  CallbackUrls.layer(links)
)

Effect.runFork(
  Effect.gen(function* () {
    yield* Effect.sync(() => process.stdout.write("ready\n"))
    return yield* TaskWorker.run({
      workerId: env("WORKER_ID"),
      leaseMs: Number(env("LEASE_MS")),
      pollInitialMs: 20,
      pollMaxMs: 100,
      retryInitialMs: 20,
      retryMaxMs: 200,
      idleWaitMs: 100
    })
  }).pipe(
    Effect.provide(services),
    Effect.tapCause((cause) =>
      Effect.sync(() => {
        console.error(cause)
        process.exit(1)
      })
    )
  )
)
