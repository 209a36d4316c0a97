/**
 * A task's status changes as a stream. `sequenceOf` numbers the statuses so that the number only
 * grows along the status machine (queued 1, submitting 2, running 3, reconciliation_required 4,
 * succeeded and failed 5): the event id of the task's event stream, which a client resumes from.
 * `changes` gives the task at each status it reaches numbered above `after`, and ends after the
 * first terminal one; woken by `TaskStore.watchStatus`, never a poll. A status the wake carries
 * needs no read; the terminal one (or a wake that did not say) reads the task, one read shared by
 * the streams of that task that ask while it is under way (`sharedReads`). A status passed
 * between two wakes is not replayed: the next event is the furthest status they carried.
 * Progress: while the task is running, each progress (`TaskRecord.progress`) a read finds that
 * differs from the last one given is a `Progress` change, unnumbered (the status sequence stays
 * the resume point; a resumed stream gives the current progress again). Progress wakes carry no
 * status, so each costs the stream a read; a progress passed between two reads is not replayed.
 */
import { Deferred, Effect, Queue, Stream } from "effect"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import { isTerminal } from "../domain/TaskStatus.ts"
import type { TaskStatus } from "../domain/TaskStatus.ts"
import type { TaskId } from "../domain/Ids.ts"
import type { TaskRecord, TaskStore } from "./TaskStore.ts"

const sequences: { readonly [S in TaskStatus]: number } = {
  queued: 1,
  submitting: 2,
  running: 3,
  reconciliation_required: 4,
  succeeded: 5,
  failed: 5
}

export const sequenceOf = (status: TaskStatus): number => sequences[status]

/** The highest sequence: a client that has seen it has seen the task's final event. */
export const LAST_SEQUENCE = 5

/** A status the task reached on its way, or its terminal status with the task as it ended. */
export type Change =
  | { readonly _tag: "Status"; readonly id: TaskId; readonly status: TaskStatus }
  | { readonly _tag: "Ended"; readonly task: TaskRecord }

/** A change of a running task's progress, a whole percent 0-100. */
export interface Progress {
  readonly _tag: "Progress"
  readonly id: TaskId
  readonly progress: number
}

export const statusOf = (change: Change): TaskStatus => (change._tag === "Ended" ? change.task.status : change.status)

export type Read = (task: TaskRecord) => Effect.Effect<TaskRecord | undefined, StoreUnavailable>

/**
 * `read`, with callers asking for a task while a read of it is under way answered by that read
 * (the watchers of a task woken together by its end). The read is started by the first caller and
 * finished even if that caller leaves.
 */
export const sharedReads = (read: Read): Read => {
  const inFlight = new Map<TaskId, Deferred.Deferred<TaskRecord | undefined, StoreUnavailable>>()
  return (task) =>
    Effect.suspend(() => {
      const under = inFlight.get(task.id)
      if (under !== undefined) return Deferred.await(under)
      const answer = Deferred.makeUnsafe<TaskRecord | undefined, StoreUnavailable>()
      inFlight.set(task.id, answer)
      return Effect.uninterruptible(
        Effect.flatMap(Effect.exit(read(task)), (exit) => {
          inFlight.delete(task.id)
          Deferred.doneUnsafe(answer, exit)
          return exit
        })
      )
    })
}

export const changes = (
  tasks: TaskStore["Service"],
  task: TaskRecord,
  after: number,
  /** How the stream reads its task after a wake that did not carry a status it can send. */
  readEnded: Read
): Stream.Stream<Change | Progress, StoreUnavailable> =>
  Stream.callback<Change | Progress, StoreUnavailable>((queue) =>
    Effect.gen(function* () {
      // Watching before reading: a change in between still wakes the loop.
      const changed = yield* tasks.watchStatus(task.id)
      let seen = after
      let current = (yield* tasks.get(task.accountId, task.id)) ?? task
      let status = current.status
      let progress: number | undefined
      for (;;) {
        const sequence = sequenceOf(status)
        if (sequence > seen) {
          seen = sequence
          Queue.offerUnsafe(
            queue,
            isTerminal(status) ? { _tag: "Ended", task: current } : { _tag: "Status", id: task.id, status }
          )
        }
        if (
          status === "running" &&
          current.status === "running" &&
          current.progress !== undefined &&
          current.progress !== progress
        ) {
          progress = current.progress
          Queue.offerUnsafe(queue, { _tag: "Progress", id: task.id, progress })
        }
        if (isTerminal(status)) return yield* Queue.end(queue)
        const carried = yield* changed
        if (carried === undefined || isTerminal(carried)) {
          current = (yield* readEnded(current)) ?? current
          // A shared read begun before this wake's write may miss it: read again, alone.
          if (!isTerminal(current.status)) current = (yield* tasks.get(task.accountId, task.id)) ?? current
          status = current.status
        } else status = carried
      }
    }).pipe(Effect.catch((error) => Queue.fail(queue, error)))
  )
