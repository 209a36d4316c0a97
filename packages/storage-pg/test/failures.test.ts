/**
 * Failures: which SQL failures are a moment's outage (StoreUnavailable, 503), which refuse one
 * request's data (a StoreRefused defect, 400), and which are defects of our own statements.
 */
import { Cause, Effect, Exit } from "effect"
import {
  AuthorizationError,
  ConnectionError,
  ConstraintError,
  DeadlockError,
  SerializationError,
  SqlError,
  SqlSyntaxError,
  UniqueViolation,
  UnknownError
} from "effect/sql/SqlError"
import type { SqlErrorReason } from "effect/sql/SqlError"
import { describe, expect, it } from "@effect/vitest"
import { StoreError } from "@taskmeter/kernel"
import * as Failures from "../src/internal/Failures.ts"

/** A SqlError as sql-pg makes it from a server error: the reason by SQLSTATE, the fields on the cause. */
const fromServer = (code: string, make: (props: { cause: unknown }) => SqlErrorReason = (props) => new UnknownError(props)) =>
  new SqlError({ reason: make({ cause: Object.assign(new Error(`server said ${code}`), { code }) }) })

describe("Failures.classify", () => {
  it("a data exception or an integrity violation refuses the request's data", () => {
    for (const code of ["22P05", "22021", "22P02", "22001", "22003", "54000", "44000"]) {
      expect(Failures.classify(fromServer(code)), code).toBe("refused")
    }
    expect(Failures.classify(fromServer("23505", (props) => new UniqueViolation({ ...props, constraint: "c" })))).toBe("refused")
    for (const code of ["23503", "23514", "23502"]) {
      expect(Failures.classify(fromServer(code, (props) => new ConstraintError(props))), code).toBe("refused")
    }
  })

  it("a lost connection, a fail-over, a shutdown, an exhausted server or a timeout is transient", () => {
    for (const code of [
      "08006",
      "08001",
      "57P01",
      "57P02",
      "57P03",
      "57014",
      "53300",
      "53100",
      "25006",
      "55P03",
      "58030",
      "XX000",
      "40003",
      "28P01"
    ]) {
      expect(Failures.classify(fromServer(code)), code).toBe("transient")
    }
    expect(Failures.classify(new SqlError({ reason: new ConnectionError({ cause: new Error("socket closed") }) }))).toBe(
      "transient"
    )
    expect(Failures.classify(new SqlError({ reason: new UnknownError({ cause: new Error("pool closed") }) }))).toBe("transient")
  })

  it("a deadlock or a serialization failure is contended: run again", () => {
    expect(Failures.classify(fromServer("40P01", (props) => new DeadlockError(props)))).toBe("contended")
    expect(Failures.classify(fromServer("40001", (props) => new SerializationError(props)))).toBe("contended")
  })

  it("a syntax error, a missing privilege or object, or a raise of our own is a defect", () => {
    expect(Failures.classify(fromServer("42601", (props) => new SqlSyntaxError(props)))).toBe("defect")
    expect(Failures.classify(fromServer("42P01", (props) => new SqlSyntaxError(props)))).toBe("defect")
    expect(Failures.classify(fromServer("42501", (props) => new AuthorizationError(props)))).toBe("defect")
    expect(Failures.classify(fromServer("0A000"))).toBe("defect")
    expect(Failures.classify(fromServer("P0001"))).toBe("defect")
  })
})

describe("Failures.run", () => {
  const outcome = (error: SqlError) => Effect.runSyncExit(Failures.run("op", Effect.fail(error)))

  it("answers a transient fault with StoreUnavailable", () => {
    const exit = outcome(fromServer("57P01"))
    expect(Exit.isFailure(exit) && Cause.findErrorOption(exit.cause)).toMatchObject({
      _tag: "Some",
      value: { _tag: "StoreUnavailable" }
    })
  })

  it("dies with StoreRefused, carrying the SQLSTATE, for refused data", () => {
    const exit = outcome(fromServer("22P05"))
    const refusal = Exit.isFailure(exit) ? StoreError.refusalOf(exit.cause) : undefined
    expect(refusal?.code).toBe("22P05")
    expect(refusal?.message).toContain("server said 22P05")
    // An integrity violation names no constraint to the caller.
    const integrity = outcome(fromServer("23514", (props) => new ConstraintError(props)))
    expect(Exit.isFailure(integrity) && StoreError.refusalOf(integrity.cause)?.message).toBe(
      "the database refused the request's data"
    )
  })

  it("dies with the SqlError itself for a defect of ours", () => {
    const error = fromServer("42601", (props) => new SqlSyntaxError(props))
    const exit = outcome(error)
    expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
    expect(Exit.isFailure(exit) && StoreError.refusalOf(exit.cause)).toBeUndefined()
  })

  it.live("runs a contended statement again", () =>
    Effect.gen(function* () {
      let attempts = 0
      const result = yield* Failures.run(
        "op",
        Effect.suspend(() =>
          ++attempts < 3 ? Effect.fail(fromServer("40001", (props) => new SerializationError(props))) : Effect.succeed("done")
        )
      )
      expect(result).toBe("done")
      expect(attempts).toBe(3)
    })
  )
})
