/**
 * Wake-ups between the processes sharing a database, for idle workers (`TaskStore.awaitWork`),
 * price-list followers (`PriceStore.subscribe`, `ChatPriceStore.subscribe`) and callers watching
 * tasks (`watchStatus`: Prefer: wait, event streams): at once within this process; across
 * processes a NOTIFY on one channel after the write commits (payload `prices` or `chat-prices`;
 * `status <id>:<n>,<id>:<n>…` naming tasks whose status changed with the sequence of the status
 * each reached (TaskEvents.sequenceOf; 5, terminal, says only that it ended; `p`, a progress
 * change, says to read the task), one NOTIFY in flight
 * per process, the moves written meanwhile gathered into the next (the furthest per task);
 * anything else is work, coalesced), heard on one
 * dedicated LISTEN connection that has answered before the store starts.
 * Without LISTEN (PGlite) wake-ups stay in this process. Why: packages/storage-pg/README.md.
 */
import { Deferred, Effect, PubSub, Queue, Schedule } from "effect"
import type { Scope } from "effect"
import type { PgClient } from "@effect/sql-pg"
import { StatusWatchers, TaskEvents } from "@taskmeter/kernel"
import type { TaskStatus } from "@taskmeter/kernel"

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

export interface StatusWakeups {
  /** These tasks changed status: wake local watchers and tell other processes. */
  readonly announce: (
    moves: ReadonlyArray<{ readonly taskId: string; readonly status: TaskStatus.TaskStatus }>
  ) => Effect.Effect<void>
  /** This running task's progress changed: wake its watchers without a status (they read it). */
  readonly announceProgress: (taskId: string) => Effect.Effect<void>
  /** TaskStore.watchStatus. */
  readonly watch: StatusWatchers.StatusWatchers["watch"]
}

export interface Wakeups {
  readonly work: WorkWakeups
  readonly prices: PriceWakeups
  readonly chatPrices: PriceWakeups
  readonly statuses: StatusWakeups
}

const PRICES = "prices"
const CHAT_PRICES = "chat-prices"
const WORK = ""
const STATUS = "status "
/** NOTIFY payloads must stay under 8000 bytes; a task is 41 characters of id and 2 of sequence. */
const IDS_PER_NOTIFY = 150

/** The non-terminal statuses by sequence: a terminal one is read, succeeded and failed share 5. */
const statusBySequence = new Map<string, TaskStatus.TaskStatus>(
  (["queued", "submitting", "running", "reconciliation_required"] as const).map((s) => [String(TaskEvents.sequenceOf(s)), s])
)

/** The entry of a task whose progress changed: no status, so the watchers read the task. */
const PROGRESS = "p"

/** `<id>:<n>` back to a wake; `<id>:p` and an id alone (a process before sequences) wake without a status. */
const wakeOf = (item: string): StatusWatchers.Wake => {
  const colon = item.indexOf(":")
  return colon < 0
    ? { taskId: item, status: undefined }
    : { taskId: item.slice(0, colon), status: statusBySequence.get(item.slice(colon + 1)) }
}

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

  const watchers = StatusWatchers.make()

  const channel = options.channel
  const scope = yield* Effect.scope

  /**
   * Sent in the background, dropped on failure; while one NOTIFY is in flight the ids written
   * meanwhile wait for the next, so a busy process sends few NOTIFYs of many ids.
   */
  const changed = new Map<string, number | typeof PROGRESS>()
  let statusInFlight = false
  const notifyStatuses: Effect.Effect<void> = Effect.suspend(() => {
    if (channel === undefined || changed.size === 0) {
      statusInFlight = false
      return Effect.void
    }
    const items: Array<string> = []
    for (const [id, sequence] of changed) {
      if (items.length === IDS_PER_NOTIFY) break
      items.push(`${id}:${sequence}`)
      changed.delete(id)
    }
    return Effect.flatMap(Effect.ignore(options.client.notify(channel, STATUS + items.join(","))), () => notifyStatuses)
  })
  const announceStatuses: StatusWakeups["announce"] = (moves) =>
    Effect.suspend(() => {
      watchers.wake(moves)
      if (channel === undefined || moves.length === 0) return Effect.void
      for (const { taskId, status } of moves) {
        const pending = changed.get(taskId)
        // A pending progress entry stays: its watchers read the task, which shows the status too.
        if (pending !== PROGRESS) changed.set(taskId, Math.max(TaskEvents.sequenceOf(status), pending ?? 0))
      }
      return sendStatuses
    })
  const announceProgress: StatusWakeups["announceProgress"] = (taskId) =>
    Effect.suspend(() => {
      watchers.wake([{ taskId, status: undefined }])
      if (channel === undefined) return Effect.void
      changed.set(taskId, PROGRESS)
      return sendStatuses
    })
  const sendStatuses: Effect.Effect<void> = Effect.suspend(() => {
    if (statusInFlight) return Effect.void
    statusInFlight = true
    return Effect.asVoid(Effect.forkIn(notifyStatuses, scope))
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
                  : notification.payload.startsWith(STATUS)
                    ? Effect.sync(() => watchers.wake(notification.payload.slice(STATUS.length).split(",").map(wakeOf)))
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
    statuses: { announce: announceStatuses, announceProgress, watch: watchers.watch }
  }
})
