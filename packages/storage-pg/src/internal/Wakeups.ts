/**
 * Wake-ups between the processes sharing a database, for idle workers (`TaskStore.awaitWork`),
 * price-list followers (`PriceStore.subscribe`, `ChatPriceStore.subscribe`) and callers waiting on
 * tasks (`watchSettled`): at once within this process; across processes a NOTIFY on one channel
 * after the write commits (payload `prices` or `chat-prices`; `settled <id>,<id>…`, one per batch of
 * finished tasks; anything else is work, coalesced), heard on one dedicated LISTEN connection that
 * has answered before the store starts.
 * Without LISTEN (PGlite) wake-ups stay in this process. Why: packages/storage-pg/README.md.
 */
import { Deferred, Effect, PubSub, Queue, Schedule } from "effect"
import type { Scope } from "effect"
import type { PgClient } from "@effect/sql-pg"
import { SettledWatchers } from "@taskmeter/kernel"

export interface WorkWakeups {
  /** Something became claimable: wake local waiters and tell other processes. */
  readonly announce: Effect.Effect<void>
  /** A claim is starting: wake-ups before this point are answered by it. */
  readonly claimStarted: Effect.Effect<void>
  readonly await: (maxWaitMs: number) => Effect.Effect<void>
}

export interface PriceWakeups {
  /** A price list was saved: wake local subscribers and tell other processes. */
  readonly announce: Effect.Effect<void>
  /** PriceStore.subscribe (ChatPriceStore.subscribe). */
  readonly subscribe: Effect.Effect<Effect.Effect<void>, never, Scope.Scope>
}

export interface SettledWakeups {
  /** These tasks entered a terminal status: wake local watchers and tell other processes. */
  readonly announce: (taskIds: ReadonlyArray<string>) => Effect.Effect<void>
  /** TaskStore.watchSettled. */
  readonly watch: SettledWatchers.SettledWatchers["watch"]
}

export interface Wakeups {
  readonly work: WorkWakeups
  readonly prices: PriceWakeups
  readonly chatPrices: PriceWakeups
  readonly settled: SettledWakeups
}

const PRICES = "prices"
const CHAT_PRICES = "chat-prices"
const WORK = ""
const SETTLED = "settled "
/** NOTIFY payloads must stay under 8000 bytes; task ids are 41 characters. */
const SETTLED_PER_NOTIFY = 150

export const make = Effect.fnUntraced(function* (options: {
  readonly client: PgClient.PgClient
  /** The NOTIFY channel; undefined turns cross-process wake-ups off. */
  readonly channel: string | undefined
}): Effect.fn.Return<Wakeups, never, Scope.Scope> {
  let generation = 0
  let claimedAt = 0
  let waiters = Deferred.makeUnsafe<void>()

  const wakeWork = Effect.sync(() => {
    generation++
    const woken = waiters
    waiters = Deferred.makeUnsafe<void>()
    Deferred.doneUnsafe(woken, Effect.void)
  })

  // One pending wake-up per subscriber is enough: a follower reads every save since in one go.
  const saves = yield* PubSub.sliding<void>(1)
  const wakePrices = Effect.asVoid(PubSub.publish(saves, undefined))
  const chatSaves = yield* PubSub.sliding<void>(1)
  const wakeChatPrices = Effect.asVoid(PubSub.publish(chatSaves, undefined))

  const watchers = SettledWatchers.make()

  const channel = options.channel
  const scope = yield* Effect.scope

  /** Not coalesced (each payload names its tasks); sent in the background, dropped on failure. */
  const announceSettled = (taskIds: ReadonlyArray<string>): Effect.Effect<void> =>
    Effect.suspend(() => {
      watchers.wake(taskIds)
      if (channel === undefined || taskIds.length === 0) return Effect.void
      const payloads: Array<string> = []
      for (let i = 0; i < taskIds.length; i += SETTLED_PER_NOTIFY) {
        payloads.push(SETTLED + taskIds.slice(i, i + SETTLED_PER_NOTIFY).join(","))
      }
      return Effect.asVoid(
        Effect.forkIn(
          Effect.forEach(payloads, (payload) => Effect.ignore(options.client.notify(channel, payload)), { discard: true }),
          scope
        )
      )
    })

  /** Wakes this process, then NOTIFYs the others with `payload`, coalesced. */
  const announcer = (payload: string, wakeLocal: Effect.Effect<void>): Effect.Effect<void> => {
    if (channel === undefined) return wakeLocal
    let inFlight = false
    let pending = false
    const notifyLoop: Effect.Effect<void> = Effect.suspend(() => {
      pending = false
      return options.client.notify(channel, payload).pipe(
        Effect.ignore,
        Effect.flatMap(() =>
          pending
            ? notifyLoop
            : Effect.sync(() => {
                inFlight = false
              })
        )
      )
    })
    return Effect.flatMap(wakeLocal, () =>
      Effect.suspend(() => {
        if (inFlight) {
          pending = true
          return Effect.void
        }
        inFlight = true
        return Effect.asVoid(Effect.forkIn(notifyLoop, scope))
      })
    )
  }

  if (channel !== undefined) {
    const answered = Deferred.makeUnsafe<void>()
    const listen = Effect.scoped(
      Effect.flatMap(
        options.client.listen(channel).pipe(Effect.onExit(() => Deferred.succeed(answered, undefined))),
        (notifications) =>
          Effect.forever(
            Effect.flatMap(Queue.take(notifications), (notification) =>
              notification.payload === PRICES
                ? wakePrices
                : notification.payload === CHAT_PRICES
                  ? wakeChatPrices
                  : notification.payload.startsWith(SETTLED)
                    ? Effect.sync(() => watchers.wake(notification.payload.slice(SETTLED.length).split(",")))
                    : wakeWork
            )
          )
      )
    )
    // A dropped listening connection is reopened; until then the polls cover.
    yield* Effect.forkScoped(Effect.retry(listen, Schedule.spaced("1 second")))
    // Listening or refused, either way the first attempt has answered.
    yield* Deferred.await(answered)
  }

  return {
    work: {
      announce: announcer(WORK, wakeWork),
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
    },
    prices: {
      announce: announcer(PRICES, wakePrices),
      subscribe: Effect.map(PubSub.subscribe(saves), PubSub.take)
    },
    chatPrices: {
      announce: announcer(CHAT_PRICES, wakeChatPrices),
      subscribe: Effect.map(PubSub.subscribe(chatSaves), PubSub.take)
    },
    settled: { announce: announceSettled, watch: watchers.watch }
  }
})
