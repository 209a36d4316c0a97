/**
 * One benchmark worker process: TaskWorker.run on PostgreSQL with an instant simulated
 * provider. Prints "ready" once its stores are open, starts working on a "go" line on stdin,
 * and on a "report" line prints the time of every claim it made as one JSON line
 * ({"claims": [[taskId, epochMs], ...]}).
 */
import { createInterface } from "node:readline"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Deferred, Effect, Layer, Redacted } from "effect"
import { BlobStore, Catalog, Executors, MediaUrls, TaskStore, TaskWorker } from "@taskmeter/kernel"
import { Simulated } from "@taskmeter/providers"
import { PgStore } from "@taskmeter/storage-pg"

const env = (name: string, fallback?: string): string => {
  const value = process.env[name] ?? fallback
  if (value === undefined) throw new Error(`bench worker: ${name} is not set`)
  return value
}

const claims: Array<readonly [string, number]> = []

/** The store's claim, noting when each task reached this worker. */
const timedClaims = Layer.effect(
  TaskStore.TaskStore,
  TaskStore.TaskStore.use((store) =>
    Effect.succeed(
      TaskStore.TaskStore.of({
        ...store,
        claim: (options) =>
          Effect.tap(store.claim(options), (claimed) =>
            Effect.sync(() => {
              const at = Date.now()
              for (const claim of claimed) claims.push([claim.task.id, at])
            })
          )
      })
    )
  )
)

const stores = PgStore.layer({
  url: env("DATABASE_URL"),
  schema: env("SCHEMA"),
  maxConnections: Number(env("POOL", "8"))
})

const services = Layer.mergeAll(
  timedClaims.pipe(Layer.provideMerge(stores)),
  BlobStore.layerFileSystem(mkdtempSync(join(tmpdir(), "taskmeter-bench-blobs-"))),
  Catalog.layer,
  Executors.layer({ adapters: [Simulated.make({ models: env("MODELS").split(",") })] }),
  MediaUrls.layer({ baseUrl: "https://bench.invalid", secret: Redacted.make("bench-secret-bench-secret-bench-secret") })
)

// Exiting normally on SIGTERM lets --cpu-prof write its profile.
process.on("SIGTERM", () => process.exit(0))

const go = Deferred.makeUnsafe<void>()
createInterface({ input: process.stdin }).on("line", (line) => {
  if (line === "go") Deferred.doneUnsafe(go, Effect.void)
  if (line === "report") process.stdout.write(`${JSON.stringify({ claims })}\n`)
})

Effect.runFork(
  Effect.gen(function* () {
    yield* Effect.sync(() => process.stdout.write("ready\n"))
    yield* Deferred.await(go)
    return yield* TaskWorker.run({
      workerId: env("WORKER_ID"),
      maxTasks: Number(env("MAX_TASKS", "256")),
      claimBatch: Number(env("CLAIM_BATCH", "100"))
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
