/**
 * The ChatBilling service: per-token billing of chat completions.
 *
 * `open` reserves the most a request can cost (prompt tokens estimated high, the tier chosen by
 * prompt size, plus max_tokens of completion) before any upstream call; `settle` charges what
 * the upstream reports and releases the rest in the same atomic unit. A request that ends in
 * any way is settled exactly once; requests left open by a dead process are released by
 * `sweepStale` at start. Records hold customer metadata only, never prompt or completion text.
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { Caller } from "./Accounts.ts"
import type * as Errors from "./Errors.ts"
import type { ChatRequestId } from "./Ids.ts"
import type { Micros } from "./Money.ts"
import type { StoreUnavailable } from "./StoreError.ts"

export interface TokenUsage {
  readonly promptTokens: number
  readonly completionTokens: number
}

export type ChatOutcome = "succeeded" | "partial" | "failed"

export interface ChatRequestRecord {
  readonly id: ChatRequestId
  readonly model: string
  readonly status: "open" | ChatOutcome
  readonly reservedMicros: Micros
  readonly chargedMicros: Micros | null
  readonly usage: TokenUsage | null
  readonly finishReason: string | null
  readonly createdAt: Date
  readonly completedAt: Date | null
}

export class ChatBilling extends Context.Service<ChatBilling, {
  readonly open: (
    caller: Caller,
    request: { readonly model: string; readonly promptTokens: number; readonly maxTokens: number }
  ) => Effect.Effect<
    ChatRequestRecord,
    | Errors.ModelNotFound
    | Errors.ModelPriceUnavailable
    | Errors.InsufficientCredits
    | Errors.PaymentReviewRequired
    | Errors.RateLimited
    | Errors.ConcurrencyLimited
    | StoreUnavailable
  >
  /** Charges the usage (capped at the reservation) and releases the rest; a second settle is a no-op. */
  readonly settle: (
    id: ChatRequestId,
    outcome: { readonly status: ChatOutcome; readonly usage: TokenUsage | null; readonly finishReason: string | null }
  ) => Effect.Effect<ChatRequestRecord, StoreUnavailable>
  readonly get: (caller: Caller, id: string) => Effect.Effect<ChatRequestRecord, Errors.RequestNotFound | StoreUnavailable>
  readonly list: (
    caller: Caller,
    page: { readonly limit: number; readonly before?: string | undefined }
  ) => Effect.Effect<
    { readonly requests: ReadonlyArray<ChatRequestRecord>; readonly nextCursor: string | null },
    Errors.RequestNotFound | StoreUnavailable
  >
  /** Releases the reservations of requests opened before `openedBefore` and never settled. */
  readonly sweepStale: (openedBefore: Date) => Effect.Effect<number, StoreUnavailable>
}>()("@taskmeter/kernel/ChatBilling") {}
