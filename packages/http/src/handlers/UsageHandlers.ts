/** GET /api/v1/usage: the caller's balances and a page of ledger entries, newest first. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Errors, Ledger } from "@taskmeter/kernel"
import type { LedgerStore } from "@taskmeter/kernel"
import { Api } from "../Api.ts"
import type { LedgerEntry } from "../api/UsageApi.ts"
import { DEFAULT_PAGE_SIZE } from "../api/UsageApi.ts"
import { CurrentCaller } from "../api/Security.ts"
import { toApiUnavailable } from "./StoreFailures.ts"

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
    return handlers.handle("get", ({ query }) =>
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
