/**
 * ChatBilling on credit leases: no store call in a request's path. Per account, this process holds
 * one lease (a block of credit reserved in the store), admits requests against it in memory, and
 * writes settled requests after the answers, in batches gathered over a few milliseconds (one charge
 * entry each); it grows the lease in the background once half a block is left, or when a request
 * does not fit (that request waits), renews it while held, closes it when idle or at shutdown, and
 * sweeps others' expired leases. Keys with a usage limit go through the per-request ChatBilling.
 * Policy: docs/decisions.md, Chat.
 */
import { Clock, Deferred, Effect, Layer, Schedule } from "effect"
import type { Scope } from "effect"
import type { Caller } from "../accounts/Accounts.ts"
import * as ChatBilling from "./ChatBilling.ts"
import * as Metrics from "../observability/Metrics.ts"
import * as ChatPrices from "./ChatPrices.ts"
import { ChatStore } from "./ChatStore.ts"
import type { ChatRequestRecord, LeasedSettlement } from "./ChatStore.ts"
import * as Errors from "../domain/Errors.ts"
import { makeChatRequestId } from "../domain/Ids.ts"
import type { AccountId, ApiKeyId, ChatRequestId } from "../domain/Ids.ts"
import type { Micros } from "../domain/Money.ts"
import { micros } from "../domain/Money.ts"

export interface Options {
  readonly limits?: ChatBilling.Limits | undefined
  /** A lease not renewed for this long is swept by any process. Default 30 s. */
  readonly ttlMs?: number | undefined
  /** A lease is grown by this many times the reservation that did not fit. Default 16. */
  readonly leaseRequests?: number | undefined
  /** A lease with no request in flight for this long is closed. Default 2 s. */
  readonly idleMs?: number | undefined
  /**
   * How long the writer gathers settled requests, from the first one, before it writes them in one
   * transaction. Default 10 ms; 0 writes them on the event loop's next turn.
   */
  readonly writeWindowMs?: number | undefined
}

export const defaults = { ttlMs: 30_000, leaseRequests: 16, idleMs: 2_000, writeWindowMs: 10 }

/** The credit this process holds for one account. */
interface Held {
  readonly id: string
  readonly accountId: AccountId
  /** Reserved in the store under the lease. */
  granted: number
  /** The reservations of requests in flight plus the charges of those settled. */
  committed: number
  inFlight: number
  lastUsedMs: number
  /** Past this the lease is not used: it may have been swept. */
  usableUntilMs: number
  growing: Deferred.Deferred<void> | undefined
  /** The last grow got less than it asked: the account runs low, so the lease grows only for a request that waits. */
  scarce: boolean
}

interface InFlight {
  readonly held: Held
  readonly record: ChatRequestRecord
  readonly apiKeyId: ApiKeyId | null
  readonly tiers: ReadonlyArray<ChatPrices.ChatPriceTier>
}

const newLeaseId = () => `lease_${crypto.randomUUID()}`

/**
 * Resumes after `ms` (0: on the event loop's next turn), either way after the answers of the requests
 * settled in this turn have gone out. A timer of the host, not the Clock: the writer's window is not
 * a matter of the test clock.
 */
const after = (ms: number) =>
  Effect.callback<void>((resume) => {
    if (ms === 0) {
      const handle = setImmediate(() => resume(Effect.void))
      return Effect.sync(() => clearImmediate(handle))
    }
    const handle = setTimeout(() => resume(Effect.void), ms)
    return Effect.sync(() => clearTimeout(handle))
  })

export const make = (
  options: Options = {}
): Effect.Effect<ChatBilling.ChatBilling["Service"], never, ChatStore | ChatPrices.ChatPrices | Scope.Scope> =>
  Effect.gen(function* () {
    const limits = options.limits ?? ChatBilling.defaultLimits
    const ttlMs = options.ttlMs ?? defaults.ttlMs
    const leaseRequests = options.leaseRequests ?? defaults.leaseRequests
    const idleMs = options.idleMs ?? defaults.idleMs
    const writeWindow = after(options.writeWindowMs ?? defaults.writeWindowMs)
    const scope = yield* Effect.scope
    const store = yield* ChatStore
    const prices = yield* ChatPrices.ChatPrices
    const exact = yield* ChatBilling.make(limits)

    const held = new Map<AccountId, Held>()
    const inFlight = new Map<ChatRequestId, InFlight>()
    const exactIds = new Set<ChatRequestId>()
    const windows = new Map<AccountId, { start: number; count: number }>()
    const openCounts = new Map<AccountId, number>()

    // The writer: settled requests and leases to close, written in order, a batch at a time.
    let queue: Array<LeasedSettlement> = []
    let closing: Array<string> = []
    let wake = Deferred.makeUnsafe<void>()
    /** Done when what is queued now is written. */
    let queued = Deferred.makeUnsafe<void>()
    let writing: Deferred.Deferred<void> | undefined
    const signal = () => Deferred.doneUnsafe(wake, Effect.void)

    /** Waits until everything settled or closed so far is in the store. */
    const flushed = Effect.suspend(() =>
      queue.length > 0 || closing.length > 0
        ? Deferred.await(queued)
        : writing !== undefined
          ? Deferred.await(writing)
          : Effect.void
    )

    /** Reads wait for the writer, but not for a store that is down. */
    const flushedSoon = Effect.ignore(Effect.timeout(flushed, "2 seconds"))

    const write = Effect.fnUntraced(
      function* (batch: ReadonlyArray<LeasedSettlement>, closes: ReadonlyArray<string>) {
        if (batch.length > 0) yield* store.settleLeased(batch)
        if (closes.length > 0) yield* store.closeLeases(closes, new Date(yield* Clock.currentTimeMillis))
      },
      Effect.tapError((error) => Effect.logWarning(`Chat settlements not written yet, retrying: ${error.message}`)),
      Effect.retry(Schedule.spaced("200 millis"))
    )

    yield* Effect.forkScoped(
      Effect.forever(
        Effect.gen(function* () {
          yield* Deferred.await(wake)
          yield* writeWindow
          wake = Deferred.makeUnsafe<void>()
          const batch = queue
          const closes = closing
          const done = queued
          queue = []
          closing = []
          queued = Deferred.makeUnsafe<void>()
          writing = done
          yield* write(batch, closes)
          writing = undefined
          Deferred.doneUnsafe(done, Effect.void)
        })
      )
    )

    const close = (lease: Held) => {
      if (held.get(lease.accountId) === lease) held.delete(lease.accountId)
      closing.push(lease.id)
      signal()
    }

    // Renewal, idle closing and the sweep of expired leases.
    let lastRenewMs = 0
    let lastSweepMs = 0
    const tick = Effect.gen(function* () {
      const nowMs = yield* Clock.currentTimeMillis
      for (const lease of held.values()) {
        if (lease.inFlight === 0 && lease.growing === undefined && nowMs - lease.lastUsedMs >= idleMs) close(lease)
      }
      if (held.size > 0 && nowMs - lastRenewMs >= ttlMs / 3) {
        lastRenewMs = nowMs
        // A lease whose grow is under way is left out: its first one may not be in the store yet, and
        // dropping it here would strand the credit that grow is about to reserve.
        const leases = Array.from(held.values()).filter((lease) => lease.growing === undefined)
        const renewed = new Set(
          yield* store.renewLeases(
            leases.map((lease) => lease.id),
            new Date(nowMs + ttlMs)
          )
        )
        for (const lease of leases) {
          if (renewed.has(lease.id)) lease.usableUntilMs = nowMs + (ttlMs * 2) / 3
          else if (held.get(lease.accountId) === lease && lease.growing === undefined) held.delete(lease.accountId)
        }
      }
      if (nowMs - lastSweepMs >= ttlMs / 2) {
        lastSweepMs = nowMs
        const swept = yield* store.sweepLeases(new Date(nowMs))
        if (swept > 0) yield* Effect.logInfo(`Released ${swept} expired chat credit leases`)
      }
    })
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.andThen(
          Effect.sleep(Math.min(1_000, idleMs, ttlMs / 3)),
          Effect.catch(tick, (error) => Effect.logWarning(`Chat lease upkeep failed: ${error.message}`))
        )
      )
    )

    // At shutdown: write what is settled and close every lease.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        for (const lease of Array.from(held.values())) close(lease)
        return flushed
      }).pipe(Effect.timeout("10 seconds"), Effect.ignore)
    )

    /**
     * Reserves what the request lacks in the account's lease (renewing it), or takes a new lease; ahead
     * of need (`ahead`), a block more, however little the account has.
     */
    const grow = Effect.fnUntraced(function* (accountId: AccountId, reservedMicros: Micros, ahead = false) {
      const nowMs = yield* Clock.currentTimeMillis
      let lease = held.get(accountId)
      if (lease === undefined) {
        lease = {
          id: newLeaseId(),
          accountId,
          granted: 0,
          committed: 0,
          inFlight: 0,
          lastUsedMs: nowMs,
          usableUntilMs: nowMs + (ttlMs * 2) / 3,
          growing: undefined,
          scarce: false
        }
        held.set(accountId, lease)
      }
      const current = lease
      const done = Deferred.makeUnsafe<void>()
      current.growing = done
      // A lease past its usable time but holding enough is only renewed (need and want 0).
      const need = ahead ? 0 : Math.max(0, reservedMicros - Math.max(0, current.granted - current.committed))
      const want = need === 0 && !ahead ? 0 : Math.max(need, reservedMicros * leaseRequests)
      const result = yield* store
        .lease({
          id: current.id,
          accountId,
          needMicros: micros(need),
          wantMicros: micros(want),
          at: new Date(nowMs),
          expiresAt: new Date(nowMs + ttlMs)
        })
        .pipe(
          Effect.ensuring(
            Effect.sync(() => {
              current.growing = undefined
              Deferred.doneUnsafe(done, Effect.void)
            })
          )
        )
      switch (result._tag) {
        case "Leased":
          current.granted += result.grantedMicros
          if (want > 0) current.scarce = result.grantedMicros < want
          current.usableUntilMs = nowMs + (ttlMs * 2) / 3
          return
        case "LeaseClosed":
          if (held.get(accountId) === current) held.delete(accountId)
          return
        case "PaymentReviewRequired":
          return yield* ChatBilling.refused(result, limits, reservedMicros)
        case "InsufficientCredits": {
          const free = Math.max(0, current.granted - current.committed)
          if (current.inFlight === 0 && held.get(accountId) === current) close(current)
          return yield* ChatBilling.refused(
            { _tag: "InsufficientCredits", availableMicros: result.availableMicros + free },
            limits,
            reservedMicros
          )
        }
      }
    })

    /**
     * Commits the reservation to the account's lease, growing it when it does not fit; once less than
     * half a block is left, a grow starts in the background so that the next requests find credit.
     */
    const admit = (accountId: AccountId, reservedMicros: Micros): Effect.Effect<Held, ChatBilling.OpenError> =>
      Effect.flatMap(Clock.currentTimeMillis, (nowMs) => {
        const lease = held.get(accountId)
        if (lease !== undefined && nowMs < lease.usableUntilMs && lease.granted - lease.committed >= reservedMicros) {
          lease.committed += reservedMicros
          lease.inFlight += 1
          lease.lastUsedMs = nowMs
          if (
            lease.growing === undefined &&
            !lease.scarce &&
            lease.granted - lease.committed < (reservedMicros * leaseRequests) / 2
          ) {
            return Effect.as(Effect.forkIn(Effect.ignore(grow(accountId, reservedMicros, true)), scope), lease)
          }
          return Effect.succeed(lease)
        }
        if (lease?.growing !== undefined) return Effect.andThen(Deferred.await(lease.growing), admit(accountId, reservedMicros))
        return Effect.andThen(grow(accountId, reservedMicros), admit(accountId, reservedMicros))
      })

    /** The account's chat rate and open requests, counted in this process. */
    const limited = (accountId: AccountId, nowMs: number): ChatBilling.OpenError | undefined => {
      const window = windows.get(accountId)
      const current = window !== undefined && nowMs < window.start + 60_000 ? window : undefined
      if (current !== undefined && current.count >= limits.requestsPerMinute) {
        return new Errors.RateLimited({
          message: `Too many chat requests this minute (at most ${limits.requestsPerMinute}); retry later.`,
          retryAfterSeconds: Math.max(1, Math.ceil((current.start + 60_000 - nowMs) / 1000))
        })
      }
      if ((openCounts.get(accountId) ?? 0) >= limits.maxOpenRequests) {
        return new Errors.ConcurrencyLimited({
          message: `Too many chat requests in progress (at most ${limits.maxOpenRequests}); wait for one to finish.`
        })
      }
      if (current === undefined) windows.set(accountId, { start: nowMs, count: 1 })
      else current.count += 1
      openCounts.set(accountId, (openCounts.get(accountId) ?? 0) + 1)
      return undefined
    }

    const release = (accountId: AccountId) => {
      const open = (openCounts.get(accountId) ?? 1) - 1
      if (open === 0) openCounts.delete(accountId)
      else openCounts.set(accountId, open)
    }

    /** A request admitted on the account's lease: priced, counted against the limits, its reservation committed. */
    const openLeased = Effect.fnUntraced(function* (caller: Caller, request: ChatBilling.OpenRequest) {
      const priced = yield* ChatBilling.reservation(prices, request)
      const nowMs = yield* Clock.currentTimeMillis
      const refusal = limited(caller.accountId, nowMs)
      if (refusal !== undefined) return yield* Effect.fail(refusal)
      const lease = yield* Effect.onError(admit(caller.accountId, priced.reservedMicros), () =>
        Effect.sync(() => release(caller.accountId))
      )
      const record: ChatRequestRecord = {
        id: makeChatRequestId(),
        model: request.model,
        status: "open",
        reservedMicros: priced.reservedMicros,
        chargedMicros: null,
        usage: null,
        finishReason: null,
        errorCode: null,
        createdAt: new Date(nowMs),
        completedAt: null
      }
      inFlight.set(record.id, { held: lease, record, apiKeyId: caller.apiKeyId, tiers: priced.tiers })
      yield* Metrics.count(Metrics.creditsReserved, { kind: "chat" }, priced.reservedMicros)
      return record
    })

    return ChatBilling.ChatBilling.of({
      open: (caller, request) =>
        caller.keyUsageLimit !== null
          ? Effect.tap(exact.open(caller, request), (record) => Effect.sync(() => exactIds.add(record.id)))
          : openLeased(caller, request),

      settle: Effect.fnUntraced(function* (id: ChatRequestId, outcome: ChatBilling.Outcome) {
        const request = inFlight.get(id)
        if (request === undefined) {
          if (exactIds.delete(id)) return yield* exact.settle(id, outcome)
          // Settled before: its record is in the store once written.
          yield* flushed
          return yield* exact.settle(id, outcome)
        }
        inFlight.delete(id)
        const { held: lease, record } = request
        const settlement = ChatBilling.settlementOf({ tiers: request.tiers, reservedMicros: record.reservedMicros }, outcome)
        const { chargeMicros, shortfallMicros } = settlement
        const nowMs = yield* Clock.currentTimeMillis
        lease.committed -= record.reservedMicros - chargeMicros
        lease.inFlight -= 1
        lease.lastUsedMs = nowMs
        release(lease.accountId)
        const settled: ChatRequestRecord = {
          ...record,
          status: outcome.status,
          chargedMicros: chargeMicros,
          usage: outcome.usage,
          finishReason: outcome.finishReason,
          errorCode: outcome.errorCode ?? null,
          completedAt: new Date(nowMs)
        }
        queue.push({
          leaseId: lease.id,
          id,
          accountId: lease.accountId,
          apiKeyId: request.apiKeyId,
          model: record.model,
          reservedMicros: record.reservedMicros,
          tiers: request.tiers,
          createdAt: record.createdAt,
          ...settlement,
          completedAt: settled.completedAt!
        })
        signal()
        yield* ChatBilling.observeSettled(settled, record.reservedMicros, chargeMicros, shortfallMicros)
        return settled
      }),

      get: (caller, id) => {
        const request = inFlight.get(id as ChatRequestId)
        return request !== undefined && request.held.accountId === caller.accountId
          ? Effect.succeed(request.record)
          : Effect.andThen(flushedSoon, exact.get(caller, id))
      },

      list: (caller, page) => Effect.andThen(flushedSoon, exact.list(caller, page)),

      sweepStale: exact.sweepStale
    })
  })

export const layer = (options: Options = {}): Layer.Layer<ChatBilling.ChatBilling, never, ChatStore | ChatPrices.ChatPrices> =>
  Layer.effect(ChatBilling.ChatBilling, make(options))
