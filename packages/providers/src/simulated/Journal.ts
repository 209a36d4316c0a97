/**
 * The simulated upstream's memory of submissions by reference, which makes `submit` idempotent per
 * reference and answers `lookup`. `memory()` lives as long as the process (after a restart `lookup`
 * finds nothing and the task is sent again, as for an upstream that lost its jobs);
 * `directory(path)` keeps one exclusively created file per reference, so several processes share
 * one simulated upstream.
 */
import { createHash } from "node:crypto"
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { Effect } from "effect"
import { Provider } from "@taskmeter/kernel"

export interface Journal {
  /** Records `upstreamId` for the reference unless one is recorded; returns the recorded one. */
  readonly record: (reference: string, upstreamId: string) => Effect.Effect<string, Provider.ProviderError>
  readonly find: (reference: string) => Effect.Effect<string | undefined, Provider.ProviderError>
  /** How many references were submitted. */
  readonly size: Effect.Effect<number, Provider.ProviderError>
}

export const memory = (): Journal => {
  const jobs = new Map<string, string>()
  return {
    record: (reference, upstreamId) =>
      Effect.sync(() => {
        const recorded = jobs.get(reference)
        if (recorded !== undefined) return recorded
        jobs.set(reference, upstreamId)
        return upstreamId
      }),
    find: (reference) => Effect.sync(() => jobs.get(reference)),
    size: Effect.sync(() => jobs.size)
  }
}

const unavailable = (cause: unknown) =>
  new Provider.ProviderError({ reason: "Retryable", message: `simulated journal unavailable: ${String(cause)}`, cause })

const isCode = (error: unknown, code: string) =>
  typeof error === "object" && error !== null && "code" in error && error.code === code

export const directory = (path: string): Journal => {
  const fileOf = (reference: string) => join(path, `${createHash("sha256").update(reference).digest("hex")}.job`)
  const find = (reference: string) =>
    Effect.tryPromise({
      try: () =>
        readFile(fileOf(reference), "utf8").catch((error) => (isCode(error, "ENOENT") ? undefined : Promise.reject(error))),
      catch: unavailable
    })
  return {
    record: (reference, upstreamId) =>
      Effect.tryPromise({
        try: async () => {
          await mkdir(path, { recursive: true })
          try {
            await writeFile(fileOf(reference), upstreamId, { flag: "wx" })
            return upstreamId
          } catch (error) {
            if (!isCode(error, "EEXIST")) throw error
            return readFile(fileOf(reference), "utf8")
          }
        },
        catch: unavailable
      }),
    find,
    size: Effect.tryPromise({
      try: () =>
        readdir(path).then(
          (names) => names.filter((name) => name.endsWith(".job")).length,
          (error) => (isCode(error, "ENOENT") ? 0 : Promise.reject(error))
        ),
      catch: unavailable
    })
  }
}
