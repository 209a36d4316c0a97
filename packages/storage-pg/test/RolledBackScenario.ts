/**
 * For the property tests that compare two ways of admitting (admissionFastPath,
 * keyedAdmission): each way runs a scenario in a transaction that is rolled back, so both start
 * from the same empty schema and leave nothing behind.
 */
import { Data, Effect } from "effect"
import type { SqlClient } from "effect/sql"

class RolledBack extends Data.TaggedError("RolledBack") {}

const inRollback = <A, E>(sql: SqlClient.SqlClient, effect: Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    let result: A | undefined
    yield* sql
      .withTransaction(
        Effect.flatMap(effect, (a) => {
          result = a
          return Effect.fail(new RolledBack())
        })
      )
      .pipe(
        Effect.catchIf(
          (error) => error instanceof RolledBack,
          () => Effect.void
        )
      )
    return result as A
  })

/** The batches, each answered by `admit`, after `setUp`; the answers and the `stateOf` left behind. */
export const run = <Batch, Answer, State, E1, E2>(
  sql: SqlClient.SqlClient,
  scenario: {
    readonly setUp: Effect.Effect<void, E1>
    readonly batches: ReadonlyArray<Batch>
    readonly admit: (batch: Batch) => Effect.Effect<Answer, unknown>
    readonly stateOf: Effect.Effect<State, E2>
  }
) =>
  inRollback(
    sql,
    Effect.gen(function* () {
      yield* scenario.setUp
      const answers: Array<Answer> = []
      for (const batch of scenario.batches) answers.push(yield* scenario.admit(batch))
      return { answers, state: yield* scenario.stateOf }
    })
  )
