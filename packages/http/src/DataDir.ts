/**
 * DATA_DIR is private to the user the server runs as (it holds the database, uploads, results and
 * the operator token): `restrictUmask` makes every file created from then on owner-only (umask 077);
 * `prepare` creates the directory 0700 and takes group and other bits off an existing tree (at most
 * MAX_ENTRIES, symbolic links untouched), logging what it fixed. `start` prepares again once PGlite
 * has opened (it sets its own files to 0666). Policy: docs/decisions.md, Hostile input.
 */
import { chmod, lstat, mkdir, readdir } from "node:fs/promises"
import { join } from "node:path"
import { isMainThread } from "node:worker_threads"
import { Data, Effect } from "effect"

/** The most entries `prepare` visits; a larger tree is left as it is past that, with a warning. */
export const MAX_ENTRIES = 100_000

/** Permissions of group and others. */
const SHARED_BITS = 0o077

export class DataDirError extends Data.TaggedError("DataDirError")<{ readonly path: string; readonly message: string }> {}

export interface Prepared {
  /** Files and directories whose group or other permissions were taken off. */
  readonly fixed: number
  /** Entries that could not be changed (another owner), left as they were. */
  readonly unchanged: ReadonlyArray<string>
  /** True when the tree had more than MAX_ENTRIES entries and the rest was not visited. */
  readonly truncated: boolean
}

/** Sets the process's umask to 077 (where a process has one: not in a worker thread). */
export const restrictUmask: Effect.Effect<void> = Effect.sync(() => {
  if (isMainThread) process.umask(0o077)
})

const codeOf = (cause: unknown): unknown =>
  typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined

/** Creates `dataDir` (0700) if missing, and takes group and other permissions off everything in it. */
export const prepare = (
  dataDir: string,
  options: { readonly maxEntries?: number | undefined; readonly quiet?: boolean | undefined } = {}
): Effect.Effect<Prepared, DataDirError> => {
  const maxEntries = options.maxEntries ?? MAX_ENTRIES
  const quiet = options.quiet ?? false
  return Effect.tryPromise({
    try: async (): Promise<Prepared> => {
      await mkdir(dataDir, { recursive: true, mode: 0o700 })
      let fixed = 0
      let visited = 0
      const unchanged: Array<string> = []
      const pending = [dataDir]
      while (pending.length > 0) {
        if (visited >= maxEntries) return { fixed, unchanged, truncated: true }
        const path = pending.pop()!
        visited++
        const stats = await lstat(path).catch((cause) => (codeOf(cause) === "ENOENT" ? undefined : Promise.reject(cause)))
        if (stats === undefined || stats.isSymbolicLink()) continue
        if ((stats.mode & SHARED_BITS) !== 0) {
          try {
            await chmod(path, stats.mode & 0o7777 & ~SHARED_BITS)
            fixed++
          } catch (cause) {
            if (codeOf(cause) === "ENOENT") continue // removed meanwhile (the database runs)
            if (codeOf(cause) !== "EPERM") throw cause
            unchanged.push(path)
          }
        }
        if (stats.isDirectory()) {
          const names = await readdir(path).catch((cause) => (codeOf(cause) === "ENOENT" ? [] : Promise.reject(cause)))
          for (const name of names) pending.push(join(path, name))
        }
      }
      return { fixed, unchanged, truncated: false }
    },
    catch: (cause) => new DataDirError({ path: dataDir, message: `cannot be made private: ${String(cause)}` })
  }).pipe(
    Effect.tap((prepared) =>
      Effect.all(
        [
          prepared.fixed === 0 || quiet
            ? Effect.void
            : Effect.logWarning(
                `${dataDir}: ${prepared.fixed} files and directories were readable by other users; made owner-only`
              ),
          prepared.unchanged.length === 0
            ? Effect.void
            : Effect.logWarning(
                `${dataDir}: ${prepared.unchanged.length} entries belong to another user and stay readable by others, e.g. ${prepared.unchanged[0]}`
              ),
          prepared.truncated
            ? Effect.logWarning(
                `${dataDir}: more than ${maxEntries} entries; the rest were not checked (chmod -R go-rwx ${dataDir})`
              )
            : Effect.void
        ],
        { discard: true }
      )
    )
  )
}
