/**
 * The ChatBilling service: per-token billing of chat completions. `open` reserves the most a
 * request can cost (prompt estimated high, tier by prompt size, plus the completion cap) before any
 * upstream call, within the account's chat limits; `settle` charges the reported usage at the prices
 * kept from the open, capped at the reservation (the cost beyond it recorded as the shortfall), and
 * releases the rest, exactly once;
 * `sweepStale` releases requests a dead process left open. Policy: docs/decisions.md, Chat.
 */
import { Clock, Context, Effect, Layer } from "effect"
import type { Caller } from "../accounts/Accounts.ts"
import * as Metrics from "../observability/Metrics.ts"
import * as ChatPrices from "./ChatPrices.ts"
import { upstreamCost } from "./ChatProvider.ts"
import type { ServedBy } from "./ChatProvider.ts"
import { ChatStore } from "./ChatStore.ts"
import type { ChatLimits, ChatOutcome, ChatRequestRecord, OpenResult } from "./ChatStore.ts"
import type { TokenUsage } from "./TokenUsage.ts"
import * as Errors from "../domain/Errors.ts"
import { isChatRequestId, makeChatRequestId } from "../domain/Ids.ts"
import type { ChatRequestId } from "../domain/Ids.ts"
import type { Micros } from "../domain/Money.ts"
import { micros, ZERO } from "../domain/Money.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"

/** Why a chat request was not opened: nothing was reserved. */
export type OpenError =
  | Errors.ModelNotFound
  | Errors.ModelPriceUnavailable
  | Errors.InsufficientCredits
  | Errors.PaymentReviewRequired
  | Errors.ApiKeyUsageExceeded
  | Errors.RateLimited
  | Errors.ConcurrencyLimited
  | StoreUnavailable

/** What a chat request asks for: its model, its prompt's tokens and its completion cap. */
export interface OpenRequest {
  readonly model: string
  readonly promptTokens: number
  readonly maxTokens: number
}

/** How a chat request ended. */
export interface Outcome {
  readonly status: ChatOutcome
  readonly usage: TokenUsage | null
  readonly finishReason: string | null
  readonly errorCode?: string | null | undefined
  /** The named upstream that answered: recorded with its cost for the usage. */
  readonly servedBy?: ServedBy | undefined
}

/** A page of a caller's chat requests: at most `limit`, older than `before`. */
export interface Page {
  readonly limit: number
  readonly before?: string | undefined
}

export class ChatBilling extends Context.Service<
  ChatBilling,
  {
    readonly open: (caller: Caller, request: OpenRequest) => Effect.Effect<ChatRequestRecord, OpenError>
    /** Charges the usage (capped at the reservation) and releases the rest; a second settle is a no-op. */
    readonly settle: (id: ChatRequestId, outcome: Outcome) => Effect.Effect<ChatRequestRecord, StoreUnavailable>
    readonly get: (caller: Caller, id: string) => Effect.Effect<ChatRequestRecord, Errors.RequestNotFound | StoreUnavailable>
    readonly list: (
      caller: Caller,
      page: Page
    ) => Effect.Effect<
      { readonly requests: ReadonlyArray<ChatRequestRecord>; readonly nextCursor: string | null },
      Errors.RequestNotFound | StoreUnavailable
    >
    /** Releases the reservations of requests opened before `openedBefore` and never settled. */
    readonly sweepStale: (openedBefore: Date) => Effect.Effect<number, StoreUnavailable>
  }
>()("@taskmeter/kernel/ChatBilling") {}

export interface Limits {
  readonly requestsPerMinute: number
  readonly maxOpenRequests: number
}

export const defaultLimits: Limits = { requestsPerMinute: 120, maxOpenRequests: 16 }

/**
 * The longest a chat request may run before its server gives up on it (and settles it). A
 * request still open well past this belongs to a process that died.
 */
export const MAX_REQUEST_MS = 15 * 60 * 1000

/** How old an open request must be before `sweepAtStart` releases it. */
export const STALE_AFTER_MS = MAX_REQUEST_MS + 5 * 60 * 1000

export const make = (limits: Limits = defaultLimits) =>
  Effect.gen(function* () {
    const store = yield* ChatStore
    const prices = yield* ChatPrices.ChatPrices
    const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis))
    /** How the requests opened by this process were priced, so that settling one is a single store call. */
    const pricedHere = new Map<
      ChatRequestId,
      { readonly tiers: ReadonlyArray<ChatPrices.ChatPriceTier>; readonly reservedMicros: Micros }
    >()

    return ChatBilling.of({
      open: Effect.fnUntraced(function* (caller: Caller, request: OpenRequest) {
        const priced = yield* reservation(prices, request)
        const chatLimits: ChatLimits = { ...limits, keyUsageLimit: caller.keyUsageLimit }
        const result = yield* store.open(
          {
            id: makeChatRequestId(),
            accountId: caller.accountId,
            apiKeyId: caller.apiKeyId,
            model: request.model,
            reservedMicros: priced.reservedMicros,
            tiers: priced.tiers,
            createdAt: yield* now
          },
          chatLimits
        )
        if (result._tag !== "Opened") return yield* refused(result, limits, priced.reservedMicros)
        pricedHere.set(result.record.id, priced)
        yield* Metrics.count(Metrics.creditsReserved, { kind: "chat" }, priced.reservedMicros)
        return result.record
      }),

      settle: Effect.fnUntraced(function* (id: ChatRequestId, outcome: Outcome) {
        let pricing = pricedHere.get(id)
        if (pricing === undefined) {
          const stored = yield* store.find(id)
          if (stored === undefined) return yield* Effect.die(new Error(`No chat request ${id} to settle`))
          if (stored.record.status !== "open") return stored.record
          pricing = { tiers: stored.tiers, reservedMicros: stored.record.reservedMicros }
        }
        const settlement = settlementOf(pricing, outcome)
        const settled = yield* store.settle({ id, ...settlement, completedAt: yield* now })
        pricedHere.delete(id)
        if (settled === undefined) return yield* Effect.die(new Error(`No chat request ${id} to settle`))
        yield* observeSettled(settled, pricing.reservedMicros, settlement.chargeMicros, settlement.shortfallMicros)
        return settled
      }),

      get: Effect.fnUntraced(function* (caller: Caller, id: string) {
        const record = isChatRequestId(id) ? yield* store.get(caller.accountId, id) : undefined
        if (record === undefined) return yield* notFound(id)
        return record
      }),

      list: Effect.fnUntraced(function* (caller: Caller, page: Page) {
        if (page.before !== undefined && !isChatRequestId(page.before)) return yield* notFound(page.before)
        const found = yield* store.list(caller.accountId, { limit: page.limit, before: page.before })
        if (found === undefined) return yield* notFound(page.before ?? "")
        return found
      }),

      sweepStale: (openedBefore) => Effect.flatMap(now, (at) => store.sweepStale(openedBefore, at))
    })
  })

/** The upstream that served a settled request and its cost, as the store records them. */
const servedFields = (outcome: Outcome): { readonly upstream: string | null; readonly upstreamCostMicros: Micros | null } => {
  if (outcome.servedBy === undefined) return { upstream: null, upstreamCostMicros: null }
  const cost = outcome.usage === null ? null : upstreamCost(outcome.servedBy, outcome.usage)
  return { upstream: outcome.servedBy.upstream, upstreamCostMicros: cost === null ? null : micros(cost) }
}

/**
 * What a settlement charges (the usage at the request's prices, at most the reservation; nothing
 * for a failure) and its shortfall: what the usage cost beyond the reservation, not charged.
 */
const settledAmounts = (
  pricing: Reservation,
  outcome: Outcome
): { readonly chargeMicros: Micros; readonly shortfallMicros: Micros } =>
  outcome.status === "failed" || outcome.usage === null
    ? { chargeMicros: ZERO, shortfallMicros: ZERO }
    : {
        chargeMicros: ChatPrices.costUpTo(pricing.tiers, outcome.usage, pricing.reservedMicros),
        shortfallMicros: ChatPrices.costBeyond(pricing.tiers, outcome.usage, pricing.reservedMicros)
      }

/** What a settlement records of a request's outcome: how it ended, its charge and shortfall, the upstream and its cost. */
export const settlementOf = (pricing: Reservation, outcome: Outcome) => ({
  status: outcome.status,
  usage: outcome.usage,
  finishReason: outcome.finishReason,
  errorCode: outcome.errorCode ?? null,
  ...settledAmounts(pricing, outcome),
  ...servedFields(outcome)
})

/** A settlement's tokens, charge, shortfall and release, in the metrics. */
export const observeSettled = (
  settled: ChatRequestRecord,
  reservedMicros: number,
  chargeMicros: number,
  shortfallMicros: number
) =>
  Effect.all(
    [
      Metrics.count(Metrics.chatShortfall, { model: settled.model }, shortfallMicros),
      Metrics.count(Metrics.chatRequests, { model: settled.model, outcome: settled.status }),
      Metrics.count(Metrics.chatTokens, { model: settled.model, kind: "prompt" }, settled.usage?.promptTokens ?? 0),
      Metrics.count(Metrics.chatTokens, { model: settled.model, kind: "completion" }, settled.usage?.completionTokens ?? 0),
      Metrics.count(Metrics.creditsCharged, { kind: "chat" }, chargeMicros),
      Metrics.count(Metrics.creditsReleased, { kind: "chat" }, reservedMicros - chargeMicros)
    ],
    { discard: true }
  )

/** What a request may cost at most, and the prices it was opened with. */
export interface Reservation {
  readonly tiers: ReadonlyArray<ChatPrices.ChatPriceTier>
  readonly reservedMicros: Micros
}

export const reservation = Effect.fnUntraced(function* (prices: ChatPrices.ChatPrices["Service"], request: OpenRequest) {
  const entry = yield* prices.lookup(request.model)
  if (entry === undefined) {
    return yield* new Errors.ModelNotFound({ message: `No chat model is called ${request.model}.`, model: request.model })
  }
  if (!ChatPrices.isPriced(entry)) {
    return yield* new Errors.ModelPriceUnavailable({
      message: `No price is configured for ${request.model}.`,
      model: request.model
    })
  }
  const reservedMicros = ChatPrices.cost(entry.tiers, {
    promptTokens: request.promptTokens,
    completionTokens: request.maxTokens
  })
  const priced: Reservation = { tiers: entry.tiers, reservedMicros }
  return priced
})

/** The error of a refused open. */
export const refused = (
  result: Exclude<OpenResult, { readonly _tag: "Opened" }>,
  limits: Limits,
  reservedMicros: Micros
): Effect.Effect<never, OpenError> => {
  switch (result._tag) {
    case "KeyUsageExceeded":
      return Effect.fail(
        new Errors.ApiKeyUsageExceeded({ message: "This API key has reached its usage limit; create a new key." })
      )
    case "RateLimited":
      return Effect.fail(
        new Errors.RateLimited({
          message: `Too many chat requests this minute (at most ${limits.requestsPerMinute}); retry after ${result.retryAfterSeconds} s.`,
          retryAfterSeconds: result.retryAfterSeconds
        })
      )
    case "ConcurrencyLimited":
      return Effect.fail(
        new Errors.ConcurrencyLimited({
          message: `Too many chat requests in progress (at most ${limits.maxOpenRequests}); wait for one to finish.`
        })
      )
    case "PaymentReviewRequired":
      return Effect.fail(
        new Errors.PaymentReviewRequired({ message: "A refund left an uncovered balance; add credits to continue." })
      )
    case "InsufficientCredits":
      return Effect.fail(
        new Errors.InsufficientCredits({
          message:
            `This request may cost up to ${reservedMicros} micro-USD (its prompt and max_tokens); ` +
            `${Math.max(0, result.availableMicros)} are available. Lower max_tokens or add credits.`,
          requiredMicros: reservedMicros,
          availableMicros: result.availableMicros
        })
      )
  }
}

const notFound = (id: string) =>
  Effect.fail(new Errors.RequestNotFound({ message: `No chat request ${id} belongs to this account.` }))

export const layer = (limits?: Limits): Layer.Layer<ChatBilling, never, ChatStore | ChatPrices.ChatPrices> =>
  Layer.effect(ChatBilling, make(limits))

/**
 * Releases the reservations of chat requests left open by a process that died: those opened
 * more than `staleAfterMs` ago. Run it when a server starts (and as often as you like after).
 */
export const sweepAtStart = (staleAfterMs: number = STALE_AFTER_MS): Effect.Effect<number, StoreUnavailable, ChatBilling> =>
  Effect.gen(function* () {
    const millis = yield* Clock.currentTimeMillis
    return yield* (yield* ChatBilling).sweepStale(new Date(millis - staleAfterMs))
  })
