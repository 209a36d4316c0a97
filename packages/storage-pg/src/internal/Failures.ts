/**
 * How a SQL failure reaches a port caller.
 *
 * - A lost deadlock or serialization conflict rolled the whole statement back, so it is run
 *   again, a few times.
 * - An unreachable, timed-out or otherwise failing database is StoreUnavailable (503 upstream).
 * - A broken constraint, a syntax error or a missing privilege is a defect: the database
 *   refused a write the kernel should never have asked for (a double release, a charge above
 *   its reservation, a key for an unknown account), and nothing was written.
 */
import { Effect, Schedule } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { StoreError } from "@taskmeter/kernel"

const defects = new Set(["ConstraintError", "UniqueViolation", "SqlSyntaxError", "AuthorizationError"])

const contended = (error: SqlError): boolean =>
  error.reason._tag === "DeadlockError" || error.reason._tag === "SerializationError"

const retryContention = Schedule.max([Schedule.recurs(5), Schedule.exponential("2 millis")])

/** Runs a store operation, retrying conflicts and translating what remains. */
export const run = <A, R>(
  operation: string,
  effect: Effect.Effect<A, SqlError, R>
): Effect.Effect<A, StoreError.StoreUnavailable, R> =>
  effect.pipe(
    Effect.retry({ while: contended, schedule: retryContention }),
    Effect.catchTag("SqlError", (error) =>
      defects.has(error.reason._tag)
        ? Effect.die(error)
        : Effect.fail(new StoreError.StoreUnavailable({ message: `${operation}: ${error.message}`, cause: error })))
  )
