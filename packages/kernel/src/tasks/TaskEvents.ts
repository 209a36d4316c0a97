/**
 * A task's status changes as a stream. `sequenceOf` numbers the statuses so that the number only
 * grows along the status machine (queued 1, submitting 2, running 3, reconciliation_required 4,
 * succeeded and failed 5): the event id of the task's event stream, which a client resumes from.
 * `changes` gives the task at each status it reaches numbered above `after`, and ends after the
 * first terminal one; woken by `TaskStore.watchStatus`, never a poll. A status passed between two
 * reads is not replayed: the next event is the status the task has then.
 */
import { Effect, Queue, Stream } from "effect"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import { isTerminal } from "../domain/TaskStatus.ts"
import type { TaskStatus } from "../domain/TaskStatus.ts"
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

export const changes = (
  tasks: TaskStore["Service"],
  task: TaskRecord,
  after: number
): Stream.Stream<TaskRecord, StoreUnavailable> =>
  Stream.callback<TaskRecord, StoreUnavailable>((queue) =>
    Effect.gen(function* () {
      // Watching before reading: a change in between still wakes the loop.
      const changed = yield* tasks.watchStatus(task.id)
      let seen = after
      let current = (yield* tasks.get(task.accountId, task.id)) ?? task
      for (;;) {
        const sequence = sequenceOf(current.status)
        if (sequence > seen) {
          seen = sequence
          Queue.offerUnsafe(queue, current)
        }
        if (isTerminal(current.status)) return yield* Queue.end(queue)
        yield* changed
        current = (yield* tasks.get(task.accountId, task.id)) ?? current
      }
    }).pipe(Effect.catch((error) => Queue.fail(queue, error)))
  )
