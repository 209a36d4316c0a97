/**
 * The growth bench's plans: EXPLAIN (ANALYZE, BUFFERS) of the hot read statements for one
 * account, each reduced to its time, the indexes it read and its buffers (hit, read), so that
 * a figure that moves with size can be traced to the index that moved it.
 */
import type { SqlClient } from "effect/sql"
import { Effect } from "effect"

export interface Plan {
  readonly statement: string
  readonly ms: number
  readonly indexes: ReadonlyArray<string>
  readonly hit: number
  readonly read: number
}

/** An account's rows as the stores select them: by its id's hash alone (the id is checked on the rows read, in the store). */
const OF_ACCOUNT = (column: string) => `hashtextextended(${column}, 0) = hashtextextended($1, 0)`
const LIST = `SELECT * FROM tasks t WHERE ${OF_ACCOUNT("t.account_id")}`
const NEWEST = `ORDER BY t.created_at DESC, t.seq DESC LIMIT 100`

/** The statements, as the stores send them, for account `$1` and task `$2`. */
const statements: ReadonlyArray<readonly [string, string]> = [
  ["poll by id", `SELECT * FROM tasks t WHERE t.id = $2`],
  ["list", `${LIST} ${NEWEST}`],
  ["list ?status=failed", `${LIST} AND t.status = 'failed' AND t.status IN ('failed', 'reconciliation_required') ${NEWEST}`],
  ["list ?status=succeeded", `${LIST} AND t.status = 'succeeded' ${NEWEST}`],
  ["list ?status=queued", `${LIST} AND t.status = 'queued' AND t.status IN ('queued', 'submitting', 'running') ${NEWEST}`],
  ["list ?status=running", `${LIST} AND t.status = 'running' AND t.status IN ('queued', 'submitting', 'running') ${NEWEST}`],
  ["list ?model=", `${LIST} AND t.model = 'song-lyrics' ${NEWEST}`],
  ["usage entries", `SELECT * FROM ledger_entries WHERE ${OF_ACCOUNT("account_id")} ORDER BY seq DESC LIMIT 21`],
  [
    "usage summary",
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, model, task_micros, chat_micros FROM account_spend_days
      WHERE account_id = $1 AND day BETWEEN current_date - 29 AND current_date ORDER BY day, model COLLATE "C"`
  ],
  // What the summary would cost read from the journal instead of the rollup (for comparison only).
  [
    "summary from the ledger",
    `SELECT (e.created_at AT TIME ZONE 'UTC')::date AS day, t.model, sum(e.amount_micros)
      FROM ledger_entries e JOIN tasks t ON t.id = e.task_id
      WHERE ${OF_ACCOUNT("e.account_id")} AND e.kind = 'charge' AND e.created_at >= current_date - 29
      GROUP BY 1, 2`
  ]
]

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`

export const explain = (sql: SqlClient.SqlClient, accountId: string, taskId: string) =>
  Effect.forEach(statements, ([statement, text]) =>
    Effect.gen(function* () {
      const query = text.replaceAll("$1", quote(accountId)).replaceAll("$2", quote(taskId))
      const rows = yield* sql.unsafe<{ "QUERY PLAN": unknown }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${query}`).unprepared
      const raw = rows[0]!["QUERY PLAN"]
      const [top] = (typeof raw === "string" ? JSON.parse(raw) : raw) as Array<{ Plan: any; "Execution Time": number }>
      const indexes = new Set<string>()
      const visit = (node: any) => {
        if (node["Index Name"] !== undefined) indexes.add(`${node["Node Type"]} ${node["Index Name"]}`)
        else if (node["Node Type"] === "Seq Scan") indexes.add(`Seq Scan ${node["Relation Name"]}`)
        for (const child of node.Plans ?? []) visit(child)
      }
      visit(top!.Plan)
      return {
        statement,
        ms: top!["Execution Time"],
        indexes: [...indexes],
        hit: top!.Plan["Shared Hit Blocks"] as number,
        read: top!.Plan["Shared Read Blocks"] as number
      } satisfies Plan
    })
  )
