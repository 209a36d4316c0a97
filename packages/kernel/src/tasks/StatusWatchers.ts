/**
 * Waiters for tasks changing status, by task id, within one process: `watch` registers for the
 * scope's lifetime and gives an effect that completes at the next `wake` of that id after the call
 * or after its own previous completion (several wakes meanwhile count once), answering the status
 * those wakes carried: the furthest along (TaskEvents.sequenceOf), or undefined when one of them
 * did not say (the caller reads the task). Stores build `TaskStore.watchStatus` on it (and carry
 * wakes between processes).
 */
import { Deferred, Effect } from "effect"
import type { Scope } from "effect"
import type { TaskStatus } from "../domain/TaskStatus.ts"
import { sequenceOf } from "./TaskEvents.ts"

/** A task that changed status, with the status when the waker knows it. */
export interface Wake {
  readonly taskId: string
  readonly status: TaskStatus | undefined
}

export interface StatusWatchers {
  readonly watch: (taskId: string) => Effect.Effect<Effect.Effect<TaskStatus | undefined>, never, Scope.Scope>
  /** Wakes the current watchers of these tasks; ids nobody watches cost a map lookup. */
  readonly wake: (wakes: Iterable<Wake>) => void
}

/** One wake of a task: `status` and `next` are set when it happens. */
interface Generation {
  readonly woken: Deferred.Deferred<void>
  status?: TaskStatus | undefined
  next?: Generation
}

interface Entry {
  current: Generation
  watchers: number
}

const generation = (): Generation => ({ woken: Deferred.makeUnsafe<void>() })

/** The status the wakes from `from` up to `to` carried together. */
const carried = (from: Generation, to: Generation): TaskStatus | undefined => {
  let status: TaskStatus | undefined
  for (let g = from; g !== to && g.next !== undefined; g = g.next) {
    if (g.status === undefined) return undefined
    if (status === undefined || sequenceOf(g.status) > sequenceOf(status)) status = g.status
  }
  return status
}

export const make = (): StatusWatchers => {
  const entries = new Map<string, Entry>()
  return {
    watch: (taskId) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          let entry = entries.get(taskId)
          if (entry === undefined) {
            entry = { current: generation(), watchers: 0 }
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
          let seen = entry.current
          const consume = () => {
            const status = carried(seen, entry.current)
            seen = entry.current
            return status
          }
          return Effect.suspend(() =>
            // A wake since the last completion (while the caller was reading) counts at once.
            entry.current !== seen ? Effect.sync(consume) : Effect.map(Deferred.await(seen.woken), consume)
          )
        })
      ),
    wake: (wakes) => {
      for (const { taskId, status } of wakes) {
        const entry = entries.get(taskId)
        if (entry === undefined) continue
        const woken = entry.current
        woken.status = status
        woken.next = generation()
        entry.current = woken.next
        Deferred.doneUnsafe(woken.woken, Effect.void)
      }
    }
  }
}
