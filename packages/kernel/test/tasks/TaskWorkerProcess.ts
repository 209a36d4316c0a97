/**
 * A worker process for the multi-process tests: TaskWorker.run on PostgreSQL against the fake
 * upstream of TaskWorkerUpstream.ts, until it is killed. Configured by environment variables;
 * prints "ready" once its stores are open.
 */
import { Effect, Layer, Redacted } from "effect"
import { PgStore } from "@taskmeter/storage-pg"
import * as AddressPolicy from "../../src/outbound/AddressPolicy.ts"
import * as BlobStore from "../../src/media/BlobStore.ts"
import * as Catalog from "../../src/catalog/Catalog.ts"
import * as Executors from "../../src/tasks/Executors.ts"
import * as MediaUrls from "../../src/media/MediaUrls.ts"
import * as TaskWorker from "../../src/tasks/TaskWorker.ts"
import * as Upstream from "./TaskWorkerUpstream.ts"

const env = (name: string): string => {
  const value = process.env[name]
  if (value === undefined) throw new Error(`TaskWorkerProcess: ${name} is not set`)
  return value
}

const services = Layer.mergeAll(
  PgStore.layer({ url: env("DATABASE_URL"), schema: env("SCHEMA"), maxConnections: 8 }),
  BlobStore.layerFileSystem(env("BLOB_DIR")),
  Catalog.layer,
  Executors.layer({ adapters: [Upstream.adapter(env("UPSTREAM_URL"), env("MODELS").split(","))] }),
  MediaUrls.layer({ baseUrl: "https://api.test", secret: Redacted.make("worker-process-test-secret-0123456789") }),
  // The fake upstream serves its result files on loopback.
  Layer.succeed(AddressPolicy.AddressPolicy, { ...AddressPolicy.publicOnly, allowLoopbackForTests: true })
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
      idleWaitMs: 200
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
