/**
 * GET /api/v1/usage: the caller's balances and a page of ledger entries, newest first.
 * GET /api/v1/usage/summary: the caller's spend of a range of UTC days (LedgerStore.spend), summed
 * by day and by model.
 */
import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Errors, Ledger, LedgerStore } from "@taskmeter/kernel"
import { Api } from "../Api.ts"
import type { LedgerEntry, UsageSummary } from "../api/UsageApi.ts"
import { DEFAULT_PAGE_SIZE } from "../api/UsageApi.ts"
import { spendRange } from "../api/SpendRange.ts"
import { CurrentCaller } from "../api/Security.ts"
import { toApiUnavailable } from "./StoreFailures.ts"

interface Figures {
  taskMicros: number
  chatMicros: number
  totalMicros: number
}

/** The rows summed per `keyOf`, in first-seen order. */
const sumBy = (rows: ReadonlyArray<LedgerStore.SpendRow>, keyOf: (row: LedgerStore.SpendRow) => string) => {
  const sums = new Map<string, Figures>()
  for (const row of rows) {
    const key = keyOf(row)
    const sum = sums.get(key) ?? { taskMicros: 0, chatMicros: 0, totalMicros: 0 }
    sum.taskMicros += row.taskMicros
    sum.chatMicros += row.chatMicros
    sum.totalMicros += row.taskMicros + row.chatMicros
    sums.set(key, sum)
  }
  return [...sums]
}

const summary = (
  range: { readonly from: string; readonly to: string },
  rows: ReadonlyArray<LedgerStore.SpendRow>
): UsageSummary => {
  const taskMicros = rows.reduce((total, row) => total + row.taskMicros, 0)
  const chatMicros = rows.reduce((total, row) => total + row.chatMicros, 0)
  return {
    ...range,
    currency: "USD",
    taskMicros,
    chatMicros,
    totalMicros: taskMicros + chatMicros,
    days: sumBy(rows, (row) => row.day).map(([day, figures]) => ({ day, ...figures })),
    models: sumBy(rows, (row) => row.model)
      .map(([model, figures]) => ({ model, ...figures }))
      .sort((a, b) => b.totalMicros - a.totalMicros || (a.model < b.model ? -1 : a.model > b.model ? 1 : 0))
  }
}

const entry = (stored: LedgerStore.LedgerEntry): LedgerEntry => ({
  id: stored.id,
  kind: stored.kind,
  amountMicros: stored.amountMicros,
  taskId: stored.taskId,
  chatRequestId: stored.chatRequestId,
  note: stored.note,
  createdAt: stored.createdAt.toISOString()
})

export const layer = HttpApiBuilder.group(Api, "usage", (handlers) =>
  Effect.gen(function* () {
    const ledger = yield* Ledger.Ledger
    const store = yield* LedgerStore.LedgerStore
    return handlers
      .handle("summary", ({ query }) =>
        Effect.gen(function* () {
          const caller = yield* CurrentCaller
          const range = spendRange(query, new Date(yield* Clock.currentTimeMillis))
          if (typeof range === "string") return yield* new Errors.InvalidRequest({ message: range })
          return summary(range, yield* store.spend(caller.accountId, range))
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("get", ({ query }) =>
        Effect.gen(function* () {
          const caller = yield* CurrentCaller
          const usage = yield* ledger.usage(caller.accountId, { limit: query.limit ?? DEFAULT_PAGE_SIZE, before: query.before })
          return {
            ...usage.balances,
            currency: "USD" as const,
            entries: usage.entries.map(entry),
            nextCursor: usage.nextCursor
          }
        }).pipe(
          Effect.catchTag("StoreUnavailable", toApiUnavailable),
          // The key authenticated a moment ago, so its account is gone only if it was just deleted.
          Effect.catchTag("AccountNotFound", () =>
            Effect.fail(new Errors.AuthRequired({ message: "The account of this API key no longer exists." }))
          )
        )
      )
  })
)
