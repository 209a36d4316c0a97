/**
 * Storage port for chat requests: each request's record and its ledger entries (`chatRequestId`).
 * Across processes: `open` checks the key's usage limit, the account's chat rate and open requests,
 * payment review and credits, then inserts the record and its reserve, atomically, never
 * over-reserving; `settle` writes the charge and release of an open request exactly once;
 * `sweepStale` fails (ABANDONED) requests opened before a time. Reads are scoped by account.
 * Credit leases (ChatLeases): `lease` reserves a block of available credit under a lease id (never
 * over-reserving), `settleLeased` records settled requests and charges them from their lease (one
 * charge entry each, once per id), `closeLeases` and `sweepLeases` release what a lease did not use.
 * A settlement records the upstream that served the request, its cost and the shortfall (usage cost
 * beyond the reservation, not charged); `margin` sums them. `revenue` reports tasks (from the
 * ledger) and chat requests per UTC day and model.
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
  /** What the usage cost beyond the reservation, not charged (0 or absent: none). */
  readonly shortfallMicros?: Micros | undefined
  readonly completedAt: Date
  /** The named upstream that answered (null: none, e.g. the local model) and its cost, when configured. */
  readonly upstream?: string | null | undefined
  readonly upstreamCostMicros?: Micros | null | undefined
}

export interface ChatPage {
  /** Newest first. */
  readonly requests: ReadonlyArray<ChatRequestRecord>
  /** The id of the last request of the page when older ones exist, else null. */
  readonly nextCursor: string | null
}

/** A block of credit to reserve (or add) under a lease: at least `needMicros`, at most `wantMicros`. */
export interface LeaseRequest {
  readonly id: string
  readonly accountId: AccountId
  readonly needMicros: Micros
  readonly wantMicros: Micros
  readonly at: Date
  readonly expiresAt: Date
}

export type LeaseResult =
  | { readonly _tag: "Leased"; readonly grantedMicros: Micros }
  /** The lease was closed (released or swept): take a new one. */
  | { readonly _tag: "LeaseClosed" }
  | { readonly _tag: "PaymentReviewRequired" }
  | { readonly _tag: "InsufficientCredits"; readonly availableMicros: number }

/**
 * A request admitted against a lease and settled by its process, written once per id; its charge
 * is taken from the lease while the lease is open and holds it, else left uncharged.
 */
export interface LeasedSettlement extends ChatSettlement {
  readonly leaseId: string
  readonly accountId: AccountId
  readonly apiKeyId: ApiKeyId | null
  readonly model: string
  readonly reservedMicros: Micros
  readonly tiers: ReadonlyArray<ChatPriceTier>
  readonly createdAt: Date
}

/** One line of the margin report: the requests of one model on one upstream (null: none). */
export interface ChatMarginRow {
  readonly model: string
  readonly upstream: string | null
  readonly requests: number
  readonly chargedMicros: Micros
  /** The upstream cost of the requests whose upstream has a cost configured. */
  readonly upstreamCostMicros: Micros
  /** What the requests' usage cost beyond their reservations, not charged. */
  readonly shortfallMicros: Micros
}

/**
 * One line of the revenue report: one UTC day and model. Tasks count by their ledger entries of
 * that day (charge, release); chat requests by their creation, settled ones only. model is null
 * for the entries of a task no longer stored.
 */
export interface RevenueRow {
  readonly day: string
  readonly model: string | null
  readonly tasksCharged: number
  readonly taskChargedMicros: Micros
  readonly tasksReleased: number
  readonly taskReleasedMicros: Micros
  readonly chatRequests: number
  readonly chatChargedMicros: Micros
  readonly chatUpstreamCostMicros: Micros
  readonly chatShortfallMicros: Micros
}

/** The refund entries of one UTC day (refunds belong to an account, not to a model). */
export interface RefundDay {
  readonly day: string
  readonly refunds: number
  readonly refundedMicros: Micros
}

export interface Revenue {
  /** By day, then model (code points, null first): at most REVENUE_ROWS lines. */
  readonly rows: ReadonlyArray<RevenueRow>
  readonly refunds: ReadonlyArray<RefundDay>
}

/** At most this many lines in a revenue report. */
export const REVENUE_ROWS = 5000

/** At most this many lines in a margin report. */
export const MARGIN_ROWS = 1000

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
    /** Reserves min(want, available) under the lease, creating it or adding to it, when at least `need` is available. */
    readonly lease: (request: LeaseRequest) => Effect.Effect<LeaseResult, StoreUnavailable>
    /** Moves the expiry of the open leases among `ids`; returns those (the others were closed). */
    readonly renewLeases: (ids: ReadonlyArray<string>, expiresAt: Date) => Effect.Effect<ReadonlyArray<string>, StoreUnavailable>
    /** Records each request not yet recorded, charging its lease; the key's use is counted. */
    readonly settleLeased: (settlements: ReadonlyArray<LeasedSettlement>) => Effect.Effect<void, StoreUnavailable>
    /** Releases what each open lease among `ids` did not charge and closes it; returns how many it closed. */
    readonly closeLeases: (ids: ReadonlyArray<string>, at: Date) => Effect.Effect<number, StoreUnavailable>
    /** Per model and upstream, the settled requests created in [from, to): at most MARGIN_ROWS lines, by model then upstream. */
    readonly margin: (range: {
      readonly from: Date
      readonly to: Date
    }) => Effect.Effect<ReadonlyArray<ChatMarginRow>, StoreUnavailable>
    /** Per UTC day and model, task ledger entries and settled chat requests of [from, to) (see RevenueRow). */
    readonly revenue: (range: { readonly from: Date; readonly to: Date }) => Effect.Effect<Revenue, StoreUnavailable>
    /** Closes, as `closeLeases`, every open lease that expired before `now`; returns how many. */
    readonly sweepLeases: (now: Date) => Effect.Effect<number, StoreUnavailable>
  }
>()("@taskmeter/kernel/ChatStore") {}
