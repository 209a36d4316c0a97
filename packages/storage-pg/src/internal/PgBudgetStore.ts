/**
 * The daily budgets in `model_budget_days` (migration 0011), each method one statement.
 *
 * - take: one upsert that writes only within the limit. The day's first take inserts its row
 *   (none when the amount alone passes the limit); a later one meets the primary key and, in
 *   DO UPDATE, holds the row locked and tests the limit against its latest committed total, so
 *   concurrent takes of one model and day, in any process, queue on that row and each sees the
 *   others' amounts. No row back means over the limit, and nothing was written.
 * - giveBack: one UPDATE of the row, floored at 0.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { BudgetStore, Money } from "@taskmeter/kernel"
import * as Failures from "./Failures.ts"

type Int8 = bigint | number | string

export const make = Effect.gen(function*() {
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
