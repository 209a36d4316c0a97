/**
 * The embedded kernel of ../embed-kernel with PostgreSQL in place of in-memory storage: the
 * only change is the storage layer. `PgStore.layer` runs its migrations when it starts, so an
 * empty database (or schema) is ready at once; blobs stay on disk.
 *
 * Run: `DATABASE_URL=postgres://user:pass@host:5432/db ./node_modules/.bin/node examples/postgres/postgres.ts`
 */
import { Config, Effect, Layer, Option, type Redacted } from "effect"
import { BlobStore, Money } from "@taskmeter/kernel"
import { PgStore } from "@taskmeter/storage-pg"
import { kernelOver, program } from "../embed-kernel/embed.ts"

export interface Options {
  readonly url: Redacted.Redacted<string>
  /** A schema of its own (created if missing); the server's search_path otherwise. */
  readonly schema?: string | undefined
  readonly blobsDir: string
}

/** PostgreSQL for the ports, files for the blobs. */
export const storage = (options: Options) =>
  Layer.merge(PgStore.layer({ url: options.url, schema: options.schema }), BlobStore.layerFileSystem(options.blobsDir))

export const main = Effect.gen(function* () {
  const url = yield* Config.Redacted("DATABASE_URL")
  const schema = yield* Config.option(Config.String("DATABASE_SCHEMA"))
  const { balances, task } = yield* program.pipe(
    Effect.provide(kernelOver(storage({ url, schema: Option.getOrUndefined(schema), blobsDir: "data/blobs" })))
  )
  yield* Effect.log(`task ${task.id}: ${task.status}; balance ${Money.formatUsd(balances.balanceMicros)} USD, kept in PostgreSQL`)
})

if (import.meta.main)
  Effect.runPromise(main).catch((error) => {
    console.error(String(error))
    process.exitCode = 1
  })
