/**
 * Embedding the taskmeter kernel in another Node service, without its HTTP server: storage in
 * memory, the offline simulated provider as the executor, a worker in the background.
 *
 * Run: `./node_modules/.bin/node examples/embed-kernel/embed.ts` from the repository root.
 */
import { Effect, Layer, Redacted } from "effect"
import {
  Accounts,
  BlobStore,
  Catalog,
  Executors,
  type Ids,
  Ledger,
  MediaStore,
  MediaUrls,
  Money,
  Pricer,
  TaskRunner,
  TaskStatus,
  TaskWorker
} from "@taskmeter/kernel"
import { Simulated } from "@taskmeter/providers"
import { MemoryStore } from "@taskmeter/storage-memory"

const executors = Executors.make({ adapters: [Simulated.make()] })

/** The kernel's services over the given storage, and a worker running tasks in the background. */
export const kernelOver = <E>(storage: Layer.Layer<MemoryStore.Stores, E>) =>
  Layer.mergeAll(
    Ledger.layer,
    TaskRunner.layer({ executorAvailable: executors.executorAvailable }).pipe(Layer.provideMerge(Accounts.layer())),
    TaskWorker.layer()
  ).pipe(
    Layer.provideMerge(Pricer.layerDefault),
    Layer.provideMerge(
      Layer.mergeAll(
        Catalog.layer,
        Layer.succeed(Executors.Executors, executors),
        // Where upstreams would fetch uploaded media; the simulated provider fetches nothing.
        MediaUrls.layer({ baseUrl: "http://127.0.0.1:8787", secret: Redacted.make("an embedded example's secret, 32+ chars") })
      )
    ),
    Layer.provideMerge(storage)
  )

/** The kernel over in-memory storage: everything is forgotten when the process ends. */
export const KernelLive = kernelOver(MemoryStore.layer)

/** Reads a stored result file whole. */
const readResult = (accountId: Ids.AccountId, id: Ids.ResultId) =>
  Effect.gen(function* () {
    const record = yield* (yield* MediaStore.MediaStore).getResult(accountId, id)
    if (record === undefined) return yield* Effect.die(`no result ${id}`)
    const body = yield* (yield* BlobStore.BlobStore).read(record.blobKey)
    if (body === undefined) return yield* Effect.die(`no bytes for result ${id}`)
    const bytes = yield* Effect.promise(async () => {
      const chunks: Array<Uint8Array> = []
      for await (const chunk of body) chunks.push(chunk)
      return Buffer.concat(chunks)
    })
    return { contentType: record.contentType, bytes }
  })

/** Creates an account, submits an image task for it, waits for the worker and reads the image. */
export const program = Effect.gen(function* () {
  const accounts = yield* Accounts.Accounts
  const runner = yield* TaskRunner.TaskRunner
  const ledger = yield* Ledger.Ledger

  const { account, key } = yield* accounts.create({ name: "embedded", credits: Money.parseUsd("5") })
  const caller = yield* accounts.authenticate(key.secret)
  const { task } = yield* runner.submit(caller, {
    model: "alpha-2-lite-text-to-image-economy",
    input: { prompt: "a lighthouse at dusk" },
    idempotencyKey: "embed-example-1"
  })

  let current = task
  while (!TaskStatus.isTerminal(current.status)) {
    yield* Effect.sleep("50 millis")
    current = yield* runner.get(caller, task.id)
  }
  const image = current.assets[0]?.resultId === undefined ? undefined : yield* readResult(account.id, current.assets[0].resultId)
  const balances = yield* ledger.balances(account.id)
  return { task: current, image, balances }
})

if (import.meta.main) {
  const { balances, image, task } = await Effect.runPromise(program.pipe(Effect.provide(KernelLive)))
  console.log(`task ${task.id}: ${task.status}, charged ${Money.formatUsd(task.chargedMicros ?? 0)} USD`)
  console.log(`result: ${image?.contentType}, ${image?.bytes.length} bytes`)
  console.log(
    `balance ${Money.formatUsd(balances.balanceMicros)} USD, available ${Money.formatUsd(balances.availableMicros)} USD`
  )
}
