/**
 * How a SQL failure reaches a port caller, by its SQLSTATE (`classify`): contended (40001, 40P01)
 * is run again a few times; transient (no SQLSTATE, classes 08, 28, 53, 57, 58, XX, 25006, 55P03,
 * 55006, 40 once retries are spent) is StoreUnavailable; refused (classes 22, 23, 44, 54: this
 * request's data) is a StoreRefused defect; any other is a defect carrying the SqlError. Why:
 * docs/decisions.md, Hostile input.
 */
import { Effect, Schedule } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { StoreError } from "@taskmeter/kernel"

export type Fault = "contended" | "transient" | "refused" | "defect"

/** The SQLSTATE the server sent, if the failure came from the server. */
export const sqlStateOf = (error: SqlError): string | undefined => {
  const cause: unknown = error.reason.cause
  if (typeof cause !== "object" || cause === null || !("code" in cause)) return undefined
  return typeof cause.code === "string" && /^[0-9A-Z]{5}$/.test(cause.code) ? cause.code : undefined
}

const TRANSIENT_CLASSES = new Set(["08", "28", "40", "53", "57", "58", "XX"])
const REFUSED_CLASSES = new Set(["22", "23", "44", "54"])
const TRANSIENT_STATES = new Set(["25006", "55P03", "55006"])

export const classify = (error: SqlError): Fault => {
  const reason = error.reason._tag
  if (reason === "DeadlockError" || reason === "SerializationError") return "contended"
  const state = sqlStateOf(error)
  if (state === undefined) {
    // Without a SQLSTATE the reason is all there is: mostly the client's own failures (a lost or
    // refused connection, a timeout, a closed pool).
    if (reason === "ConstraintError" || reason === "UniqueViolation") return "refused"
    return reason === "SqlSyntaxError" || reason === "AuthorizationError" ? "defect" : "transient"
  }
  if (TRANSIENT_STATES.has(state) || TRANSIENT_CLASSES.has(state.slice(0, 2))) return "transient"
  if (REFUSED_CLASSES.has(state.slice(0, 2))) return "refused"
  return "defect"
}

const retryContention = Schedule.max([Schedule.recurs(5), Schedule.exponential("2 millis")])

/** What the database said, for a caller: its message for a data exception, a summary otherwise. */
const refusalMessage = (error: SqlError, state: string | undefined): string => {
  const cause: unknown = error.reason.cause
  const said = cause instanceof Error ? cause.message : undefined
  return state?.startsWith("23") || said === undefined
    ? "the database refused the request's data"
    : `the database refused the request's data (${said})`
}

/** Runs a store operation, retrying conflicts and translating what remains. */
export const run = <A, R>(
  operation: string,
  effect: Effect.Effect<A, SqlError, R>
): Effect.Effect<A, StoreError.StoreUnavailable, R> =>
  effect.pipe(
    Effect.retry({ while: (error) => classify(error) === "contended", schedule: retryContention }),
    Effect.catchTag("SqlError", (error) => {
      switch (classify(error)) {
        case "refused": {
          const code = sqlStateOf(error)
          return Effect.die(new StoreError.StoreRefused({ message: refusalMessage(error, code), code, cause: error }))
        }
        case "defect":
          return Effect.die(error)
        default:
          return Effect.fail(new StoreError.StoreUnavailable({ message: `${operation}: ${error.message}`, cause: error }))
      }
    })
  )
