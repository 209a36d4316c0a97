import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as Accounts from "../../src/accounts/Accounts.ts"
import { AccountStore } from "../../src/accounts/AccountStore.ts"
import * as Errors from "../../src/domain/Errors.ts"
import * as LedgerModule from "../../src/ledger/Ledger.ts"
import { StoreUnavailable } from "../../src/domain/StoreError.ts"

/** Accounts over a memory store whose `authenticate` calls are counted; the store is left reachable to revoke "from elsewhere". */
const setup = (options: Partial<Accounts.Options> = {}) => {
  const calls = { authenticate: 0, down: false }
  const counted = Layer.effect(
    AccountStore,
    Effect.map(AccountStore, (store) => ({
      ...store,
      authenticate: (hash: string, now: Date) =>
        Effect.suspend(() => {
          calls.authenticate++
          return calls.down ? Effect.fail(new StoreUnavailable({ message: "connection refused" })) : store.authenticate(hash, now)
        })
    }))
  )
  const layer = Layer.mergeAll(
    Accounts.layer({ ...Accounts.defaultOptions, ...options }).pipe(Layer.provide(counted)),
    LedgerModule.layer
  ).pipe(Layer.provideMerge(MemoryStore.layer))
  return { calls, layer }
}

describe("Accounts.authenticateCached", () => {
  it.effect("serves a key verified within the TTL without asking the store, then asks again", () => {
    const { calls, layer } = setup({ keyCacheTtlMs: 5_000 })
    return Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const { account, key } = yield* accounts.create({ name: "acme" })
      const caller = yield* accounts.authenticateCached(key.secret)
      expect(caller).toEqual({ accountId: account.id, apiKeyId: key.record.id, scopes: key.record.scopes, keyUsageLimit: null })
      calls.down = true
      yield* TestClock.adjust("4999 millis")
      expect(yield* accounts.authenticateCached(key.secret)).toEqual(caller)
      expect(calls.authenticate).toBe(1)
      yield* TestClock.adjust("1 millis")
      expect(yield* Effect.flip(accounts.authenticateCached(key.secret))).toBeInstanceOf(Errors.AuthUnavailable)
      expect(calls.authenticate).toBe(2)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a key revoked by another process is refused once the TTL has passed; revoked here, at once", () => {
    const { layer } = setup({ keyCacheTtlMs: 5_000 })
    return Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const store = yield* AccountStore
      const { account, key } = yield* accounts.create({ name: "acme" })
      const other = yield* accounts.createKey(account.id)
      yield* accounts.authenticateCached(key.secret)
      yield* accounts.authenticateCached(other.secret)
      // Another process revokes `key` in the shared store: served here until the entry's TTL ends.
      yield* store.revokeApiKey(account.id, key.record.id, new Date(0))
      yield* TestClock.adjust("4 seconds")
      yield* accounts.authenticateCached(key.secret)
      yield* TestClock.adjust("1 second")
      expect(yield* Effect.flip(accounts.authenticateCached(key.secret))).toBeInstanceOf(Errors.PermissionDenied)
      // Revoked through this process's Accounts: refused on the next request.
      yield* accounts.revokeKey(account.id, other.record.id)
      expect(yield* Effect.flip(accounts.authenticateCached(other.secret))).toBeInstanceOf(Errors.PermissionDenied)
    }).pipe(Effect.provide(layer))
  })

  it.effect("never serves a key from another key's entry", () => {
    const { calls, layer } = setup()
    return Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const first = yield* accounts.create({ name: "first" })
      const second = yield* accounts.create({ name: "second" })
      expect((yield* accounts.authenticateCached(first.key.secret)).accountId).toBe(first.account.id)
      expect((yield* accounts.authenticateCached(second.key.secret)).accountId).toBe(second.account.id)
      expect((yield* accounts.authenticateCached(first.key.secret)).accountId).toBe(first.account.id)
      // A key differing from a cached one in its last character is unknown, and asks the store.
      const last = first.key.secret.at(-1) === "A" ? "B" : "A"
      const forged = `${first.key.secret.slice(0, -1)}${last}`
      expect(yield* Effect.flip(accounts.authenticateCached(forged))).toBeInstanceOf(Errors.AuthRequired)
      expect(calls.authenticate).toBe(3)
    }).pipe(Effect.provide(layer))
  })

  it.effect("counts the key's rate in this process, across store reads", () => {
    const { calls, layer } = setup({ keyCacheTtlMs: 1_000 })
    return Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const { account } = yield* accounts.create({ name: "acme" })
      const key = yield* accounts.createKey(account.id, { rateLimitPerMinute: 3 })
      yield* accounts.authenticateCached(key.secret)
      yield* accounts.authenticateCached(key.secret)
      yield* TestClock.adjust("2 seconds")
      yield* accounts.authenticateCached(key.secret)
      const error = yield* Effect.flip(accounts.authenticateCached(key.secret))
      expect(error).toMatchObject({ _tag: "ApiKeyRateLimited", retryAfterSeconds: 58 })
      expect(calls.authenticate).toBe(2)
      yield* TestClock.adjust("58 seconds")
      yield* accounts.authenticateCached(key.secret)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a key with a usage limit asks the store every time", () => {
    const { calls, layer } = setup()
    return Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const { account } = yield* accounts.create({ name: "acme" })
      const key = yield* accounts.createKey(account.id, { usageLimit: 5 })
      yield* accounts.authenticateCached(key.secret)
      yield* accounts.authenticateCached(key.secret)
      expect(calls.authenticate).toBe(2)
    }).pipe(Effect.provide(layer))
  })

  it.effect("keeps at most keyCacheEntries keys; a TTL of 0 keeps none", () => {
    const bounded = setup({ keyCacheEntries: 1 })
    const off = setup({ keyCacheTtlMs: 0 })
    const twoKeys = (calls: { authenticate: number }) =>
      Effect.gen(function* () {
        const accounts = yield* Accounts.Accounts
        const { account, key } = yield* accounts.create({ name: "acme" })
        const other = yield* accounts.createKey(account.id)
        for (const secret of [key.secret, other.secret, key.secret, key.secret]) yield* accounts.authenticateCached(secret)
        return calls.authenticate
      })
    return Effect.gen(function* () {
      expect(yield* twoKeys(bounded.calls).pipe(Effect.provide(bounded.layer))).toBe(3)
      expect(yield* twoKeys(off.calls).pipe(Effect.provide(off.layer))).toBe(4)
    })
  })
})
