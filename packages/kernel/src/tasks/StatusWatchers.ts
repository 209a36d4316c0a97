/**
 * Waiters for tasks changing status, by task id, within one process: `watch` registers for the
 * scope's lifetime and gives an effect that completes at the next `wake` of that id after the call
 * or after its own previous completion (several wakes meanwhile count once: read the task again).
 * Stores build `TaskStore.watchStatus` on it (and carry wakes between processes).
 */
import { Deferred, Effect } from "effect"
import type { Scope } from "effect"

export interface StatusWatchers {
  readonly watch: (taskId: string) => Effect.Effect<Effect.Effect<void>, never, Scope.Scope>
  /** Wakes the current watchers of these ids; ids nobody watches cost a map lookup. */
  readonly wake: (taskIds: Iterable<string>) => void
}

interface Entry {
  deferred: Deferred.Deferred<void>
  watchers: number
}

export const make = (): StatusWatchers => {
  const entries = new Map<string, Entry>()
  return {
    watch: (taskId) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          let entry = entries.get(taskId)
          if (entry === undefined) {
            entry = { deferred: Deferred.makeUnsafe<void>(), watchers: 0 }
            entries.set(taskId, entry)
          }
          entry.watchers++
          return entry
        }),
        (entry) =>
          Effect.sync(() => {
            if (--entry.watchers === 0 && entries.get(taskId) === entry) entries.delete(taskId)
          })
      ).pipe(
        Effect.map((entry) => {
          let seen = entry.deferred
          return Effect.suspend(() => {
            // A wake since the last completion (while the caller was reading) counts at once.
            if (entry.deferred !== seen) {
              seen = entry.deferred
              return Effect.void
            }
            return Effect.map(Deferred.await(seen), () => {
              seen = entry.deferred
            })
          })
        })
      ),
    wake: (taskIds) => {
      for (const taskId of taskIds) {
        const entry = entries.get(taskId)
        if (entry === undefined) continue
        Deferred.doneUnsafe(entry.deferred, Effect.void)
        entry.deferred = Deferred.makeUnsafe<void>()
      }
    }
  }
}
