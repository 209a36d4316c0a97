/**
 * The platform's daily budgets (BudgetStore): per model and UTC day, the micros admitted. The
 * limit is not stored (it is in the price list and passed with every take); the CHECK keeps a
 * total from going negative whatever a statement does. A row is made by the day's first take
 * and never deleted: one row per budgeted model and day is the operator's history.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE TABLE model_budget_days (
    model text NOT NULL,
    day date NOT NULL,
    admitted_micros bigint NOT NULL CHECK (admitted_micros >= 0),
    PRIMARY KEY (model, day)
  )`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
