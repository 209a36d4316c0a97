/**
 * Storage port for chat requests: the record of each request and its credit movements, which
 * are ledger entries carrying the request's `chatRequestId` (see LedgerStore for their effects).
 *
 * Promises every store keeps, across processes sharing it:
 * - `open` is one atomic unit: it checks, in this order, the key's usage limit, the account's
 *   chat rate (a fixed one-minute window per account, started by the first request in it) and
 *   concurrency (requests still open), payment review and available credits; only if all pass
 *   does it insert the record (status `open`) and a `reserve` entry of `reservedMicros`, and
 *   count one use on the key. Concurrent opens on one account never reserve more than is
 *   available. Anything but Opened writes nothing.
 * - `settle` ends an open request once: a `charge` entry of `chargeMicros` (when above zero,
 *   at most the reservation) and a `release` entry of the rest (when above zero), with the
 *   outcome written on the record, in one atomic unit. Of concurrent settles exactly one
 *   writes; the others, and any later one, get the record as it stands. A store enforces at
 *   most one charge and one release per chat request (a SQL store with unique indexes).
 * - `sweepStale` settles, as failed with nothing charged and errorCode ABANDONED, every request
 *   still open that was opened before the given time: the requests of a process that died.
 * - Reads are scoped by account: another account's request is indistinguishable from a
 *   missing one, and so is a cursor that names one.
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { ChatPriceTier } from "./ChatPrices.ts"
import type { TokenUsage } from "./TokenUsage.ts"
import type { AccountId, ApiKeyId, ChatRequestId } from "../domain/Ids.ts"
import type { Micros } from "../domain/Money.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"

/** The errorCode of a request that `sweepStale` settled. */
export const ABANDONED = "ABANDONED"

/** How a chat request ended. */
export type ChatOutcome = "succeeded" | "partial" | "failed"

/** A chat request as stored: metadata, usage and charge, never its text. */
export interface ChatRequestRecord {
  readonly id: ChatRequestId
  readonly model: string
  readonly status: "open" | ChatOutcome
  readonly reservedMicros: Micros
  readonly chargedMicros: Micros | null
  readonly usage: TokenUsage | null
  /** The upstream's finish reason (stop, length, tool_calls, content_filter...) when it gave one. */
  readonly finishReason: string | null
  /** Why a request did not succeed: an error code (UPSTREAM_ERROR...) or CLIENT_DISCONNECTED. */
  readonly errorCode: string | null
  readonly createdAt: Date
  readonly completedAt: Date | null
}

export interface NewChatRequest {
  readonly id: ChatRequestId
  readonly accountId: AccountId
  readonly apiKeyId: ApiKeyId | null
  readonly model: string
  readonly reservedMicros: Micros
  /** The model's price tiers when the request was opened: the charge is computed from these. */
  readonly tiers: ReadonlyArray<ChatPriceTier>
  readonly createdAt: Date
}

export interface ChatLimits {
  /** Chat requests per account in one fixed one-minute window. */
  readonly requestsPerMinute: number
  /** Chat requests of the account still open. */
  readonly maxOpenRequests: number
  /** The key's lifetime usage limit (null = unlimited); a chat request counts one use. */
  readonly keyUsageLimit: number | null
}

export type OpenResult =
  | { readonly _tag: "Opened"; readonly record: ChatRequestRecord }
  | { readonly _tag: "KeyUsageExceeded" }
  | { readonly _tag: "RateLimited"; readonly retryAfterSeconds: number }
  | { readonly _tag: "ConcurrencyLimited" }
  | { readonly _tag: "PaymentReviewRequired" }
  | { readonly _tag: "InsufficientCredits"; readonly availableMicros: number }

/** A request as the kernel settles it: its record and what it was priced with. */
export interface StoredChatRequest {
  readonly record: ChatRequestRecord
  readonly accountId: AccountId
  readonly tiers: ReadonlyArray<ChatPriceTier>
}

export interface ChatSettlement {
  readonly id: ChatRequestId
  readonly status: ChatOutcome
  readonly usage: TokenUsage | null
  readonly finishReason: string | null
  readonly errorCode: string | null
  /** At most the reservation; the rest is released. */
  readonly chargeMicros: Micros
  readonly completedAt: Date
}

export interface ChatPage {
  /** Newest first. */
  readonly requests: ReadonlyArray<ChatRequestRecord>
  /** The id of the last request of the page when older ones exist, else null. */
  readonly nextCursor: string | null
}

export class ChatStore extends Context.Service<
  ChatStore,
  {
    readonly open: (request: NewChatRequest, limits: ChatLimits) => Effect.Effect<OpenResult, StoreUnavailable>
    /** Any account's request, for settlement; undefined when there is none with this id. */
    readonly find: (id: ChatRequestId) => Effect.Effect<StoredChatRequest | undefined, StoreUnavailable>
    /** undefined when there is no such request; the record unchanged when it was already settled. */
    readonly settle: (settlement: ChatSettlement) => Effect.Effect<ChatRequestRecord | undefined, StoreUnavailable>
    readonly get: (accountId: AccountId, id: ChatRequestId) => Effect.Effect<ChatRequestRecord | undefined, StoreUnavailable>
    /** undefined when `before` is not one of the account's requests. */
    readonly list: (
      accountId: AccountId,
      page: { readonly limit: number; readonly before?: ChatRequestId | undefined }
    ) => Effect.Effect<ChatPage | undefined, StoreUnavailable>
    /** Settles every request opened before `openedBefore` and still open; returns how many. */
    readonly sweepStale: (openedBefore: Date, now: Date) => Effect.Effect<number, StoreUnavailable>
  }
>()("@taskmeter/kernel/ChatStore") {}
