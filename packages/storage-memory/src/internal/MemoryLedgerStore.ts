import { Clock, Effect } from "effect"
import { LedgerStore, Money } from "@taskmeter/kernel"
import { append, balanceEffect, reservedEffect } from "./Journal.ts"
import { balancesOf } from "./State.ts"
import type { AccountRow, State } from "./State.ts"

const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

export type Kind = "grant" | "refund" | "adjustment"

const after: Record<Kind, (row: AccountRow) => void> = {
  grant: (row) => {
    if (row.balance >= row.reserved) row.review = false
  },
  refund: (row) => {
    if (row.balance < row.reserved) row.review = true
  },
  adjustment: () => {}
}

/** A grant, refund or adjustment, once per external reference; undefined for an unknown account. Synchronous. */
export const credit = (
  state: State,
  kind: Kind,
  request: LedgerStore.CreditChange,
  at: Date
): LedgerStore.Movement | undefined => {
  const row = state.accounts.get(request.accountId)
  if (row === undefined) return undefined
  const refKey = request.externalRef === undefined ? undefined : `${request.accountId} ${kind} ${request.externalRef}`
  const earlier = refKey === undefined ? undefined : state.externalRefs.get(refKey)
  if (earlier !== undefined) return { entry: earlier, balances: balancesOf(row) }
  const entry = append(state, row, { kind, amountMicros: request.amountMicros, note: request.note, createdAt: at })
  if (refKey !== undefined) state.externalRefs.set(refKey, entry)
  after[kind](row)
  return { entry, balances: balancesOf(row) }
}

export const make = (state: State): LedgerStore.LedgerStore["Service"] => {
  const change = (kind: Kind) => (request: LedgerStore.CreditChange) =>
    Effect.flatMap(Clock.currentTimeMillis, (millis) => Effect.sync(() => credit(state, kind, request, new Date(millis))))

  return LedgerStore.LedgerStore.of({
    grant: change("grant"),
    refund: change("refund"),
    adjust: change("adjustment"),
    balances: (accountId) =>
      Effect.sync(() => {
        const row = state.accounts.get(accountId)
        return row === undefined ? undefined : balancesOf(row)
      }),
    entries: (accountId, page) =>
      Effect.sync((): LedgerStore.EntryPage | undefined => {
        const row = state.accounts.get(accountId)
        if (row === undefined) return undefined
        let end = row.entries.length
        if (page.before !== undefined) {
          if (state.entryOwners.get(page.before) !== accountId) return undefined
          end = row.entries.findIndex((entry) => entry.id === page.before)
        }
        const start = Math.max(0, end - page.limit)
        const entries = row.entries.slice(start, end).reverse()
        return { entries, nextCursor: start > 0 ? (entries.at(-1)?.id ?? null) : null }
      }),
    // The account's lines, which Journal.append keeps per day and model: never its entries.
    spend: (accountId, range) =>
      Effect.sync(() =>
        [...(state.accounts.get(accountId)?.spend.values() ?? [])]
          .filter((line) => line.day >= range.from && line.day <= range.to)
          .sort((a, b) => byCodePoint(a.day, b.day) || byCodePoint(a.model, b.model))
          .map((line) => ({
            day: line.day,
            model: line.model,
            taskMicros: Money.micros(line.taskMicros),
            chatMicros: Money.micros(line.chatMicros)
          }))
      ),
    audit: Effect.sync(() =>
      Array.from(state.accounts.values()).flatMap((row): Array<LedgerStore.AuditFinding> => {
        const journal = row.entries.reduce(
          (sum, entry) => ({
            balanceMicros: sum.balanceMicros + balanceEffect(entry),
            reservedMicros: sum.reservedMicros + reservedEffect(entry)
          }),
          { balanceMicros: 0, reservedMicros: 0 }
        )
        const cached = { balanceMicros: row.balance, reservedMicros: row.reserved }
        return journal.balanceMicros === cached.balanceMicros && journal.reservedMicros === cached.reservedMicros
          ? []
          : [{ accountId: row.account.id, cached, journal }]
      })
    )
  })
}
