import { Clock, Effect } from "effect"
import type { Context } from "effect"
import { SqlClient } from "effect/sql"
import { LedgerStore, Money } from "@taskmeter/kernel"
import * as AccountRows from "./AccountRows.ts"
import * as Failures from "./Failures.ts"
import type { EntryRow } from "./Rows.ts"
import { toBalances, toEntry } from "./Rows.ts"

type Int8 = bigint | number

interface CreditRow extends EntryRow {
  readonly balance: Int8
  readonly reserved: Int8
  readonly review: boolean
}

interface BalanceRow {
  readonly balance_micros: Int8
  readonly reserved_micros: Int8
  readonly payment_review: boolean
}

interface AuditRow {
  readonly id: string
  readonly cached_balance: Int8
  readonly cached_reserved: Int8
  readonly journal_balance: Int8
  readonly journal_reserved: Int8
}

const entryColumns = "id, account_id, kind, amount_micros, task_id, chat_request_id, note, created_at"

/**
 * A page of the account's entries, newest first, before the entry numbered `beforeSeq` (from the
 * newest when null): one statement for each case, so that every plan, a generic one included,
 * takes both bounds as conditions of `ledger_entries_account_newest` (an optional cursor written
 * `$2 IS NULL OR seq < $2` is only a filter there, and reads every newer entry of the account).
 */
export const entriesPage = (sql: SqlClient.SqlClient, accountId: string, beforeSeq: Int8 | null, limit: number) =>
  beforeSeq === null
    ? sql<EntryRow>`SELECT ${sql.literal(entryColumns)} FROM ledger_entries
        WHERE ${AccountRows.hashOf(sql, "account_id", accountId)}
        ORDER BY seq DESC LIMIT ${limit}`
    : sql<EntryRow>`SELECT ${sql.literal(entryColumns)} FROM ledger_entries
        WHERE ${AccountRows.hashOf(sql, "account_id", accountId)} AND seq < ${beforeSeq}::bigint
        ORDER BY seq DESC LIMIT ${limit}`

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  const credit = (kind: "grant" | "refund" | "adjustment") => (change: LedgerStore.CreditChange) =>
    Failures.run(
      kind,
      Effect.flatMap(
        Clock.currentTimeMillis,
        (now) =>
          sql<CreditRow>`SELECT (c.entry).*, c.balance, c.reserved, c.review
          FROM taskmeter_credit(${kind}, ${change.accountId}, ${change.amountMicros}::bigint, ${change.note}::text,
            ${change.externalRef ?? null}::text, ${new Date(now)}) c`
      ).pipe(
        Effect.map((rows): LedgerStore.Movement | undefined => {
          if (rows.length === 0) return undefined
          const row = rows[0]
          return { entry: toEntry(row), balances: toBalances(row.balance, row.reserved, row.review) }
        })
      )
    )

  const entries: Context.Service.Shape<typeof LedgerStore.LedgerStore>["entries"] = (accountId, page) =>
    Effect.gen(function* () {
      let beforeSeq: Int8 | null = null
      if (page.before !== undefined) {
        // By primary key alone, the owner checked here: see migration 0001 on plans.
        const cursor = yield* sql<{ readonly seq: Int8; readonly account_id: string }>`SELECT seq, account_id
          FROM ledger_entries WHERE id = ${page.before}`
        if (cursor.length === 0 || cursor[0].account_id !== accountId) return undefined
        beforeSeq = cursor[0].seq
      }
      const rows = yield* AccountRows.ownRows(accountId, page.limit + 1, (asked) => entriesPage(sql, accountId, beforeSeq, asked))
      const shown = rows.slice(0, page.limit).map(toEntry)
      return {
        entries: shown,
        nextCursor: rows.length > page.limit && shown.length > 0 ? shown[shown.length - 1].id : null
      }
    }).pipe((effect) => Failures.run("entries", effect))

  return LedgerStore.LedgerStore.of({
    grant: credit("grant"),
    refund: credit("refund"),
    adjust: credit("adjustment"),

    balances: (accountId) =>
      Failures.run(
        "balances",
        sql<BalanceRow>`SELECT balance_micros, reserved_micros, payment_review FROM accounts WHERE id = ${accountId}`.pipe(
          Effect.map((rows) =>
            rows.length === 0 ? undefined : toBalances(rows[0].balance_micros, rows[0].reserved_micros, rows[0].payment_review)
          )
        )
      ),

    entries,

    // The account's rows of account_spend_days (migration 0036), kept by a trigger with each charge.
    spend: (accountId, range) =>
      Failures.run(
        "spend",
        sql<{
          readonly day: string
          readonly model: string
          readonly task_micros: Int8
          readonly chat_micros: Int8
        }>`SELECT to_char(day, 'YYYY-MM-DD') AS day, model, task_micros, chat_micros
          FROM account_spend_days
          WHERE account_id = ${accountId} AND day BETWEEN ${range.from}::date AND ${range.to}::date
          ORDER BY day, model COLLATE "C"`
      ).pipe(
        Effect.map((rows) =>
          rows.map((row) => ({
            day: row.day,
            model: row.model,
            taskMicros: Money.micros(Number(row.task_micros)),
            chatMicros: Money.micros(Number(row.chat_micros))
          }))
        )
      ),

    audit: Failures.run(
      "audit",
      sql<AuditRow>`SELECT a.id,
          a.balance_micros AS cached_balance,
          a.reserved_micros AS cached_reserved,
          coalesce(j.balance, 0)::bigint AS journal_balance,
          coalesce(j.reserved, 0)::bigint AS journal_reserved
        FROM accounts a
        LEFT JOIN (
          SELECT account_id,
            sum(CASE kind
              WHEN 'grant' THEN amount_micros
              WHEN 'adjustment' THEN amount_micros
              WHEN 'refund' THEN -amount_micros
              WHEN 'charge' THEN -amount_micros
              ELSE 0
            END) AS balance,
            sum(CASE kind
              WHEN 'reserve' THEN amount_micros
              WHEN 'charge' THEN -amount_micros
              WHEN 'release' THEN -amount_micros
              ELSE 0
            END) AS reserved
          FROM ledger_entries
          GROUP BY account_id
        ) j ON j.account_id = a.id
        WHERE a.balance_micros <> coalesce(j.balance, 0) OR a.reserved_micros <> coalesce(j.reserved, 0)
        ORDER BY a.seq`.pipe(
        Effect.map((rows) =>
          rows.map(
            (row): LedgerStore.AuditFinding => ({
              accountId: row.id as LedgerStore.AuditFinding["accountId"],
              cached: { balanceMicros: Number(row.cached_balance), reservedMicros: Number(row.cached_reserved) },
              journal: { balanceMicros: Number(row.journal_balance), reservedMicros: Number(row.journal_reserved) }
            })
          )
        )
      )
    )
  })
})
