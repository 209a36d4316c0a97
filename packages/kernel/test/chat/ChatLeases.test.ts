import { describe, expect, it } from "@effect/vitest"
import { TestClock } from "effect/testing"
import { Clock, Context, Effect, Exit, Fiber, Layer, Scope } from "effect"
import { MemoryStore } from "@taskmeter/storage-memory"
import type { Caller } from "../../src/accounts/Accounts.ts"
import { ChatBilling } from "../../src/chat/ChatBilling.ts"
import * as ChatLeases from "../../src/chat/ChatLeases.ts"
import * as ChatPrices from "../../src/chat/ChatPrices.ts"
import { ChatStore } from "../../src/chat/ChatStore.ts"
import type { AccountId } from "../../src/domain/Ids.ts"
import { micros } from "../../src/domain/Money.ts"
import * as Scopes from "../../src/accounts/Scope.ts"
import { allEntries, at, expectBalances, expectBooksBalance, fundedAccount, insertKey } from "../../src/testing/Fixtures.ts"

const MODEL = "test-chat"
const TIERS = [{ upToPromptTokens: null, promptMicrosPerMillion: 1_000_000, completionMicrosPerMillion: 1_000_000 }]
const prices = { models: { [MODEL]: { enabled: true, provider: "fake", contextLength: 100_000, tiers: TIERS } } }

/** A request of 100 prompt and 900 completion tokens reserves 1,000 micros. */
const R = 1_000
const ask = { model: MODEL, promptTokens: 100, maxTokens: 900 }
const used = { promptTokens: 100, completionTokens: 200 }

const limits = { requestsPerMinute: 1_000, maxOpenRequests: 1_000 }
const options = { limits, ttlMs: 30_000, leaseRequests: 4, idleMs: 2_000 }

const stores = Layer.merge(MemoryStore.layer, ChatPrices.layer(prices).pipe(Layer.orDie))
const layer = (leaseOptions: ChatLeases.Options = options) => ChatLeases.layer(leaseOptions).pipe(Layer.provideMerge(stores))

/** ChatLeases over a store whose every lease call takes 100 ms of the test clock. */
const slowLeasesLayer = ChatLeases.layer(options).pipe(
  Layer.provide(
    Layer.effect(
      ChatStore,
      Effect.map(ChatStore, (store) =>
        ChatStore.of({ ...store, lease: (request) => Effect.delay(store.lease(request), "100 millis") })
      )
    )
  ),
  Layer.provideMerge(stores)
)

const callerOf = (accountId: AccountId, keyUsageLimit: number | null = null, apiKeyId: Caller["apiKeyId"] = null): Caller => ({
  accountId,
  apiKeyId,
  scopes: Scopes.all,
  keyUsageLimit
})

const open = (caller: Caller) => ChatBilling.use((billing) => billing.open(caller, ask))
const settle = (id: Parameters<ChatBilling["Service"]["settle"]>[0]) =>
  ChatBilling.use((billing) => billing.settle(id, { status: "succeeded", usage: used, finishReason: "stop" }))

/**
 * Over `slowLeasesLayer` with a lease of 4: the first request waits for its lease (100 ms of the test
 * clock), the third leaves 1 reservation and starts a grow ahead, which lands while no request waits.
 */
const threeRequestsThenTheGrowAhead = (caller: Caller) =>
  Effect.gen(function* () {
    const first = yield* Effect.forkChild(open(caller))
    yield* TestClock.adjust(100)
    yield* Fiber.join(first)
    yield* open(caller)
    yield* open(caller)
    yield* TestClock.adjust(100)
  })

const leaseEntries = (accountId: AccountId) =>
  Effect.map(allEntries(accountId), (entries) =>
    entries
      .filter((entry) => entry.note?.startsWith("lease_") === true)
      .map((entry) => [entry.kind, entry.amountMicros])
      .reverse()
  )

describe("ChatLeases", () => {
  it.effect("admits against one lease, writes one charge per request, and returns the rest when idle", () =>
    Effect.gen(function* () {
      const accountId = yield* fundedAccount(100 * R)
      const caller = callerOf(accountId)
      const first = yield* open(caller)
      const second = yield* open(caller)
      expect(first.status).toBe("open")
      // One lease of 4 reservations covers both requests: one reserve entry, nothing per request.
      yield* expectBalances(accountId, { balance: 100 * R, reserved: 4 * R })
      expect(yield* leaseEntries(accountId)).toEqual([["reserve", 4 * R]])
      const settled = yield* settle(first.id)
      expect(settled).toMatchObject({ status: "succeeded", chargedMicros: 300, usage: used })
      yield* settle(second.id)
      // Reads wait for the settled requests to be written.
      const page = yield* ChatBilling.use((billing) => billing.list(caller, { limit: 10 }))
      expect(page.requests.map((request) => [request.id, request.chargedMicros])).toEqual([
        [second.id, 300],
        [first.id, 300]
      ])
      yield* expectBalances(accountId, { balance: 100 * R - 600, reserved: 4 * R - 600 })
      yield* TestClock.adjust(options.idleMs + 1_000)
      yield* ChatBilling.use((billing) => billing.list(caller, { limit: 1 }))
      yield* expectBalances(accountId, { balance: 100 * R - 600, reserved: 0 })
      expect(yield* leaseEntries(accountId)).toEqual([
        ["reserve", 4 * R],
        ["release", 4 * R - 600]
      ])
      yield* expectBooksBalance
    }).pipe(Effect.provide(layer()))
  )

  it.effect("grows the lease when a request does not fit, and refuses what the account cannot cover", () =>
    Effect.gen(function* () {
      const accountId = yield* fundedAccount(6 * R + R / 2)
      const caller = callerOf(accountId)
      const results = yield* Effect.all(
        Array.from({ length: 10 }, () => Effect.result(open(caller))),
        { concurrency: "unbounded" }
      )
      expect(results.filter((result) => result._tag === "Success")).toHaveLength(6)
      const refusals = results.flatMap((result) => (result._tag === "Failure" ? [result.failure] : []))
      expect(refusals.map((error) => error._tag)).toEqual(Array.from({ length: 4 }, () => "InsufficientCredits"))
      expect(refusals[0]).toMatchObject({ requiredMicros: R, availableMicros: R / 2 })
      yield* expectBalances(accountId, { balance: 6 * R + R / 2, reserved: 6 * R + R / 2 })
      yield* expectBooksBalance
    }).pipe(Effect.provide(layer()))
  )

  it.effect("grows the lease in the background once half a block is left, so that the next requests do not wait", () =>
    Effect.gen(function* () {
      const accountId = yield* fundedAccount(100 * R)
      const caller = callerOf(accountId)
      yield* threeRequestsThenTheGrowAhead(caller)
      expect(yield* leaseEntries(accountId)).toEqual([
        ["reserve", 4 * R],
        ["reserve", 4 * R]
      ])
      yield* open(caller)
      const fifth = yield* Effect.forkChild(open(caller), { startImmediately: true })
      expect(fifth.pollUnsafe()?._tag).toBe("Success")
      yield* expectBooksBalance
    }).pipe(Effect.provide(slowLeasesLayer))
  )

  it.effect("grows the lease ahead no more once the account runs low, leaving the rest to other processes", () =>
    Effect.gen(function* () {
      const accountId = yield* fundedAccount(5 * R)
      const caller = callerOf(accountId)
      yield* threeRequestsThenTheGrowAhead(caller)
      // The block ahead got 1 reservation of the 4 it asked for: the last fits, and nothing more is leased.
      yield* open(caller)
      yield* TestClock.adjust(100)
      expect(yield* leaseEntries(accountId)).toEqual([
        ["reserve", 4 * R],
        ["reserve", R]
      ])
      yield* open(caller)
      const sixth = yield* Effect.forkChild(Effect.flip(open(caller)))
      yield* TestClock.adjust(100)
      expect((yield* Fiber.join(sixth))._tag).toBe("InsufficientCredits")
      yield* expectBooksBalance
    }).pipe(Effect.provide(slowLeasesLayer))
  )

  it.effect("a key with a usage limit is billed per request in the store", () =>
    Effect.gen(function* () {
      const accountId = yield* fundedAccount(100 * R)
      const key = yield* insertKey(accountId, { usageLimit: 5 })
      const record = yield* open(callerOf(accountId, 5, key.id))
      yield* settle(record.id)
      const entries = (yield* allEntries(accountId)).filter((entry) => entry.chatRequestId === record.id)
      expect(entries.map((entry) => entry.kind).reverse()).toEqual(["reserve", "charge", "release"])
      expect(yield* leaseEntries(accountId)).toEqual([])
      yield* expectBooksBalance
    }).pipe(Effect.provide(layer()))
  )

  it.effect("limits the account's open requests and its rate in this process", () =>
    Effect.gen(function* () {
      const accountId = yield* fundedAccount(100 * R)
      const caller = callerOf(accountId)
      const first = yield* open(caller)
      yield* open(caller)
      expect((yield* Effect.flip(open(caller)))._tag).toBe("ConcurrencyLimited")
      yield* settle(first.id)
      yield* open(caller)
      expect((yield* Effect.flip(open(caller)))._tag).toBe("RateLimited")
    }).pipe(Effect.provide(layer({ ...options, limits: { requestsPerMinute: 3, maxOpenRequests: 2 } })))
  )

  it.effect("sweeps a lease its process left behind once it expires", () =>
    Effect.gen(function* () {
      const accountId = yield* fundedAccount(10 * R)
      const store = yield* ChatStore
      const expiresAt = new Date((yield* Clock.currentTimeMillis) + options.ttlMs)
      yield* store.lease({ id: "lease_dead", accountId, needMicros: micros(R), wantMicros: micros(4 * R), at: at(0), expiresAt })
      yield* expectBalances(accountId, { balance: 10 * R, reserved: 4 * R })
      yield* TestClock.adjust(options.ttlMs - 1_000)
      yield* expectBalances(accountId, { balance: 10 * R, reserved: 4 * R })
      yield* TestClock.adjust(options.ttlMs)
      yield* expectBalances(accountId, { balance: 10 * R, reserved: 0 })
      yield* expectBooksBalance
    }).pipe(Effect.provide(layer()))
  )

  /** ChatLeases with `writeWindowMs`, over a store that records the size of every batch it writes. */
  const countedWrites = (writeWindowMs: number, batches: Array<number>) =>
    ChatLeases.layer({ ...options, writeWindowMs }).pipe(
      Layer.provide(
        Layer.effect(
          ChatStore,
          Effect.map(ChatStore, (store) =>
            ChatStore.of({
              ...store,
              settleLeased: (batch) =>
                Effect.andThen(
                  Effect.sync(() => batches.push(batch.length)),
                  store.settleLeased(batch)
                )
            })
          )
        )
      ),
      Layer.provideMerge(stores)
    )

  /** Two requests settled 20 ms apart (of real time: the window is a host timer), then read back. */
  const twoSettledApart = Effect.gen(function* () {
    const accountId = yield* fundedAccount(100 * R)
    const caller = callerOf(accountId)
    const first = yield* open(caller)
    const second = yield* open(caller)
    yield* settle(first.id)
    yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
    yield* settle(second.id)
    const page = yield* ChatBilling.use((billing) => billing.list(caller, { limit: 10 }))
    expect(page.requests.map((request) => request.chargedMicros)).toEqual([300, 300])
    yield* expectBalances(accountId, { balance: 100 * R - 600, reserved: 4 * R - 600 })
  })

  it.effect("writes the requests settled within its write window in one batch", () => {
    const batches: Array<number> = []
    return twoSettledApart.pipe(
      Effect.andThen(Effect.sync(() => expect(batches).toEqual([2]))),
      Effect.provide(countedWrites(300, batches))
    )
  })

  it.effect("with no write window writes each turn's settlements on the next", () => {
    const batches: Array<number> = []
    return twoSettledApart.pipe(
      Effect.andThen(Effect.sync(() => expect(batches).toEqual([1, 1]))),
      Effect.provide(countedWrites(0, batches))
    )
  })

  it.effect("at shutdown writes what was settled and closes its leases", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(ChatLeases.layer(options), scope)
      const billing = Context.get(context, ChatBilling)
      const accountId = yield* fundedAccount(100 * R)
      const caller = callerOf(accountId)
      const record = yield* billing.open(caller, ask)
      yield* billing.settle(record.id, { status: "succeeded", usage: used, finishReason: "stop" })
      yield* Scope.close(scope, Exit.void)
      yield* expectBalances(accountId, { balance: 100 * R - 300, reserved: 0 })
      yield* expectBooksBalance
    }).pipe(Effect.provide(stores))
  )
})
