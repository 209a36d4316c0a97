/**
 * Wake-ups for idle workers (TaskStore.awaitWork).
 *
 * In this process a wake-up completes every waiting awaitWork at once. Across processes the
 * store NOTIFYs a channel after an admission and LISTENs on it with a dedicated connection.
 * The NOTIFY is sent after the admission commits, on its own and coalesced (at most one in
 * flight, one more if admissions arrived meanwhile), because a NOTIFY inside the admission
 * transaction would take PostgreSQL's global notify lock at every commit and serialize them.
 * Where LISTEN is not available (PGlite behind its socket) the caller's timeout is the
 * fallback poll.
 */
import { Deferred, Effect, Queue, Schedule } from "effect"
import type { Scope } from "effect"
import type { PgClient } from "@effect/sql-pg"

export interface Wakeups {
  /** Something became claimable: wake local waiters and tell other processes. */
  readonly announce: Effect.Effect<void>
  /** A claim is starting: wake-ups before this point are answered by it. */
  readonly claimStarted: Effect.Effect<void>
  readonly await: (maxWaitMs: number) => Effect.Effect<void>
}

export const make = Effect.fnUntraced(function*(options: {
  readonly client: PgClient.PgClient
  /** The NOTIFY channel; undefined turns cross-process wake-ups off. */
  readonly channel: string | undefined
}): Effect.fn.Return<Wakeups, never, Scope.Scope> {
  let generation = 0
  let claimedAt = 0
  let waiters = Deferred.makeUnsafe<void>()

  const wakeLocal = Effect.sync(() => {
    generation++
    const woken = waiters
    waiters = Deferred.makeUnsafe<void>()
    Deferred.doneUnsafe(woken, Effect.void)
  })

  const channel = options.channel
  let announce: Effect.Effect<void> = wakeLocal

  if (channel !== undefined) {
    const scope = yield* Effect.scope
    let inFlight = false
    let pending = false
    const notifyLoop: Effect.Effect<void> = Effect.suspend(() => {
      pending = false
      return options.client.notify(channel, "").pipe(
        Effect.ignore,
        Effect.flatMap(() => pending ? notifyLoop : Effect.sync(() => { inFlight = false }))
      )
    })
    announce = Effect.flatMap(wakeLocal, () =>
      Effect.suspend(() => {
        if (inFlight) {
          pending = true
          return Effect.void
        }
        inFlight = true
        return Effect.asVoid(Effect.forkIn(notifyLoop, scope))
      }))

    const listen = Effect.scoped(
      Effect.flatMap(options.client.listen(channel), (notifications) =>
        Effect.forever(Effect.flatMap(Queue.take(notifications), () => wakeLocal)))
    )
    // A dropped listening connection is reopened; until then the poll covers.
    yield* Effect.forkScoped(Effect.retry(listen, Schedule.spaced("1 second")))
  }

  return {
    announce,
    claimStarted: Effect.sync(() => {
      claimedAt = generation
    }),
    await: (maxWaitMs) =>
      Effect.suspend(() => {
        if (generation !== claimedAt) {
          claimedAt = generation
          return Effect.void
        }
        return Effect.asVoid(Effect.timeoutOption(Deferred.await(waiters), maxWaitMs))
      })
  }
})
