/**
 * The range of GET /api/v1/usage/summary: UTC days `from` and `to` (YYYY-MM-DD, both included),
 * `to` by default today and `from` DEFAULT_SPEND_DAYS - 1 days before `to`; `from` not after `to`
 * and at most MAX_SPEND_DAYS days (LedgerStore.SPEND_DAYS), else a message saying what to fix.
 */
import { Schema } from "effect"
import { LedgerStore } from "@taskmeter/kernel"

export const DEFAULT_SPEND_DAYS = 30
export const MAX_SPEND_DAYS = LedgerStore.SPEND_DAYS

const DAY_MS = 86_400_000
const dayRule = "must be a calendar day as YYYY-MM-DD"

const isDay = (text: string): boolean =>
  /^\d{4}-\d{2}-\d{2}$/u.test(text) && new Date(`${text}T00:00:00Z`).toISOString().slice(0, 10) === text

export const Day = Schema.String.check(Schema.makeFilter(isDay, { message: dayRule })).annotate({ format: "date" })

const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10)
const msOf = (day: string): number => Date.parse(`${day}T00:00:00Z`)

/** The range asked for, its defaults filled in from `now`; a string says what is wrong with it. */
export const spendRange = (
  query: { readonly from?: string | undefined; readonly to?: string | undefined },
  now: Date
): { readonly from: string; readonly to: string } | string => {
  const to = query.to ?? dayOf(now.getTime())
  const from = query.from ?? dayOf(msOf(to) - (DEFAULT_SPEND_DAYS - 1) * DAY_MS)
  if (from > to) return `from (${from}) must be on or before to (${to}).`
  const days = (msOf(to) - msOf(from)) / DAY_MS + 1
  if (days > MAX_SPEND_DAYS) {
    return `from..to spans ${days} days; ask for at most ${MAX_SPEND_DAYS} (for example from=${dayOf(msOf(to) - (MAX_SPEND_DAYS - 1) * DAY_MS)}).`
  }
  return { from, to }
}
