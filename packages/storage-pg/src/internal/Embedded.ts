/**
 * An embedded PostgreSQL: PGlite (PostgreSQL compiled to WebAssembly, in this process) with its files
 * in a data directory, served on 127.0.0.1 by pglite-socket so the same PgClient, SQL and migrations
 * run on it. PGlite is one session shared by every connection, so the store uses one (the server
 * admits a spare for reconnects). `<dataDir>/pg.lock` holds the owner's pid so no second store opens
 * the same files; a lock of a process no longer running is taken over.
 */
import { mkdir, open, readFile, rm } from "node:fs/promises"
import { join } from "node:path"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { Effect } from "effect"
import type { Scope } from "effect"

export interface Address {
  readonly host: string
  readonly port: number
}

const HOST = "127.0.0.1"

const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Takes `<dataDir>/pg.lock` for this process, or fails naming the process that holds it. */
const lock = (dataDir: string): Effect.Effect<void, Error, Scope.Scope> => {
  const path = join(dataDir, "pg.lock")
  const take = async (): Promise<void> => {
    await mkdir(dataDir, { recursive: true })
    for (;;) {
      try {
        const file = await open(path, "wx")
        await file.writeFile(String(process.pid))
        await file.close()
        return
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
        const holder = Number(await readFile(path, "utf8").catch(() => ""))
        if (Number.isInteger(holder) && holder > 0 && isRunning(holder)) {
          throw new Error(`The embedded database in ${dataDir} is in use by process ${holder}`)
        }
        await rm(path, { force: true })
      }
    }
  }
  return Effect.acquireRelease(
    Effect.tryPromise({ try: take, catch: (cause) => (cause instanceof Error ? cause : new Error(String(cause))) }),
    () => Effect.promise(() => rm(path, { force: true }))
  )
}

export const start = (options: {
  readonly dataDir: string
  readonly port: number
  readonly schema: string | undefined
}): Effect.Effect<Address, Error, Scope.Scope> =>
  Effect.gen(function* () {
    yield* lock(options.dataDir)
    const directory = join(options.dataDir, "pg")
    const db = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          await mkdir(directory, { recursive: true })
          return PGlite.create({ dataDir: directory })
        },
        catch: (cause) => new Error(`Could not open the embedded database in ${directory}`, { cause })
      }),
      (db) => Effect.promise(() => db.close())
    )
    // One session for every connection, so the schema is chosen once, here.
    if (options.schema !== undefined) {
      const schema = options.schema
      yield* Effect.tryPromise({
        try: () => db.exec(`CREATE SCHEMA IF NOT EXISTS "${schema}"; SET search_path TO "${schema}"`),
        catch: (cause) => new Error(`Could not select schema ${schema}`, { cause })
      })
    }
    const server = new PGLiteSocketServer({ db, host: HOST, port: options.port, maxConnections: 2 })
    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => server.start(),
        catch: (cause) => new Error(`Could not serve the embedded database on ${HOST}:${options.port}`, { cause })
      }),
      () => Effect.promise(() => server.stop())
    )
    return { host: HOST, port: Number(server.getServerConn().split(":").pop()) }
  })
