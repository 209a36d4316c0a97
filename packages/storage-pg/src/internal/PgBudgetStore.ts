/**
 * The daily budgets in `model_budget_days` (migration 0011), each method one statement. `take` is
 * an upsert that writes only within the limit (DO UPDATE holds the row and tests its latest
 * committed total, so concurrent takes of one model and day queue on it); no row back means over
 * the limit, nothing written. `giveBack` is one UPDATE floored at 0.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { BudgetStore, Money } from "@taskmeter/kernel"
import * as Failures from "./Failures.ts"

type Int8 = bigint | number | string

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  return BudgetStore.BudgetStore.of({
    take: ({ amountMicros, day, limitMicros, model }) =>
      Failures.run(
        "take from a daily budget",
        sql`INSERT INTO model_budget_days AS t (model, day, admitted_micros)
          SELECT ${model}, ${day}::date, ${amountMicros}::bigint
          WHERE ${amountMicros}::bigint <= ${limitMicros}::bigint
          ON CONFLICT (model, day) DO UPDATE SET admitted_micros = t.admitted_micros + EXCLUDED.admitted_micros
            WHERE t.admitted_micros + EXCLUDED.admitted_micros <= ${limitMicros}::bigint
          RETURNING 1`.pipe(Effect.map((rows) => rows.length > 0))
      ),

    giveBack: ({ amountMicros, day, model }) =>
      Failures.run(
        "give back to a daily budget",
        Effect.asVoid(sql`UPDATE model_budget_days SET admitted_micros = greatest(0, admitted_micros - ${amountMicros}::bigint)
          WHERE model = ${model} AND day = ${day}::date`)
      ),

    spent: (model, day) =>
      Failures.run(
        "read a daily budget",
        sql<{ readonly admitted_micros: Int8 }>`SELECT admitted_micros FROM model_budget_days
          WHERE model = ${model} AND day = ${day}::date`.pipe(
          Effect.map(([row]) => Money.micros(row === undefined ? 0 : Number(row.admitted_micros)))
        )
      )
  })
})
