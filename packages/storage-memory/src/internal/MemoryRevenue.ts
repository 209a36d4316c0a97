/**
 * The revenue report (ChatStore.revenue) over the memory state: task charge and release entries
 * and refunds from the accounts' journals, settled chat requests from the chat rows, in [from, to).
 */
import { ChatStore, Money } from "@taskmeter/kernel"
import type { State } from "./State.ts"

export interface ChatFigures {
  readonly model: string
  readonly createdAt: Date
  readonly chargedMicros: number
  readonly costMicros: number
  readonly shortfallMicros: number
}

interface Line {
  day: string
  model: string | null
  tasksCharged: number
  taskCharged: number
  tasksReleased: number
  taskReleased: number
  chatRequests: number
  chatCharged: number
  chatCost: number
  chatShortfall: number
}

const dayOf = (at: Date) => at.toISOString().slice(0, 10)
const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

export const revenue = (
  state: State,
  chats: Iterable<ChatFigures>,
  range: { readonly from: Date; readonly to: Date }
): ChatStore.Revenue => {
  const within = (at: Date) => at >= range.from && at < range.to
  const lines = new Map<string, Line>()
  const line = (day: string, model: string | null): Line => {
    const key = JSON.stringify([day, model])
    const found = lines.get(key)
    if (found !== undefined) return found
    const fresh: Line = {
      day,
      model,
      tasksCharged: 0,
      taskCharged: 0,
      tasksReleased: 0,
      taskReleased: 0,
      chatRequests: 0,
      chatCharged: 0,
      chatCost: 0,
      chatShortfall: 0
    }
    lines.set(key, fresh)
    return fresh
  }
  const refunds = new Map<string, { day: string; refunds: number; refunded: number }>()
  for (const account of state.accounts.values()) {
    for (const entry of account.entries) {
      if (!within(entry.createdAt)) continue
      const day = dayOf(entry.createdAt)
      if (entry.kind === "refund") {
        const found = refunds.get(day) ?? { day, refunds: 0, refunded: 0 }
        found.refunds += 1
        found.refunded += entry.amountMicros
        refunds.set(day, found)
        continue
      }
      if (entry.taskId === null || (entry.kind !== "charge" && entry.kind !== "release")) continue
      const target = line(day, state.tasks.get(entry.taskId)?.record.model ?? null)
      if (entry.kind === "charge") {
        target.tasksCharged += 1
        target.taskCharged += entry.amountMicros
      } else {
        target.tasksReleased += 1
        target.taskReleased += entry.amountMicros
      }
    }
  }
  for (const chat of chats) {
    if (!within(chat.createdAt)) continue
    const target = line(dayOf(chat.createdAt), chat.model)
    target.chatRequests += 1
    target.chatCharged += chat.chargedMicros
    target.chatCost += chat.costMicros
    target.chatShortfall += chat.shortfallMicros
  }
  return {
    rows: [...lines.values()]
      .sort((a, b) => byCodePoint(a.day, b.day) || (a.model === null ? -1 : b.model === null ? 1 : byCodePoint(a.model, b.model)))
      .slice(0, ChatStore.REVENUE_ROWS)
      .map((l) => ({
        day: l.day,
        model: l.model,
        tasksCharged: l.tasksCharged,
        taskChargedMicros: Money.micros(l.taskCharged),
        tasksReleased: l.tasksReleased,
        taskReleasedMicros: Money.micros(l.taskReleased),
        chatRequests: l.chatRequests,
        chatChargedMicros: Money.micros(l.chatCharged),
        chatUpstreamCostMicros: Money.micros(l.chatCost),
        chatShortfallMicros: Money.micros(l.chatShortfall)
      })),
    refunds: [...refunds.values()]
      .sort((a, b) => byCodePoint(a.day, b.day))
      .map((r) => ({ day: r.day, refunds: r.refunds, refundedMicros: Money.micros(r.refunded) }))
  }
}
