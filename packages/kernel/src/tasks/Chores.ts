/**
 * Periodic work that one process at a time does for all of them, through `TaskStore.takeChore`:
 * `asChore` runs a pass only when this process takes the chore (no other holder's lease is live
 * and it was last taken `everyMs` ago or more) and frees it after; `every` offers a chore at once
 * and then on its interval, forever. Used by Housekeeping and the payment sweeps.
 */
import { Clock, Duration, Effect } from "effect"
import { TaskStore } from "./TaskStore.ts"

export interface Chore {
  readonly name: string
  /** This process, the same for all its chores. */
  readonly holder: string
  readonly everyMs: number
  readonly leaseMs: number
}

/** Runs `pass` as `chore` when this process takes it, and frees it after; nothing otherwise. */
export const asChore = <R>(chore: Chore, pass: Effect.Effect<void, never, R>): Effect.Effect<void, never, R | TaskStore> =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    const now = new Date(yield* Clock.currentTimeMillis)
    const taken = yield* store.takeChore({ ...chore, now })
    if (!taken) return
    yield* pass.pipe(Effect.ensuring(Effect.ignore(store.freeChore(chore))))
  }).pipe(Effect.catchCause((cause) => Effect.logWarning(`Taking the chore ${chore.name} failed`, cause)))

/** Runs `chore` at once and then every `intervalMs`, forever. */
export const every = <R>(intervalMs: number, chore: Effect.Effect<void, never, R>): Effect.Effect<never, never, R> =>
  Effect.gen(function* () {
    const interval = Duration.millis(intervalMs)
    for (;;) {
      yield* chore
      yield* Effect.sleep(interval)
    }
  })
