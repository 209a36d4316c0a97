import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as Accounts from "../src/Accounts.ts"
import { AccountStore } from "../src/AccountStore.ts"
import * as Errors from "../src/Errors.ts"
import * as Ids from "../src/Ids.ts"
import { Ledger } from "../src/Ledger.ts"
import * as LedgerModule from "../src/Ledger.ts"
import * as Money from "../src/Money.ts"
import { StoreUnavailable } from "../src/StoreError.ts"

const withAccounts = (options?: Accounts.Options) =>
  Layer.mergeAll(Accounts.layer(options), LedgerModule.layer).pipe(Layer.provideMerge(MemoryStore.layer))

describe("Accounts", () => {
  it.effect("creates an account with a key shown once and opening credits", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts.Accounts
      const { account, key } = yield* accounts.create({ name: "acme", credits: Money.micros(5_000_000) })
      expect(key.secret).toMatch(/^tm_[A-Za-z0-9_-]{43}$/)
      expect(key.record.hash).toBe(createHash("sha256").update(key.secret).digest("hex"))
      expect(key.record.displayPrefix).toBe(key.secret.slice(0, 7))
      expect(key.record.scopes).toEqual(["jobs:create", "jobs:read", "usage:read", "chat:create"])
      expect(JSON.stringify(yield* accounts.listKeys(account.id))).not.toContain(key.secret)
      expect((yield* (yield* Ledger).balances(account.id)).balanceMicros).toBe(5_000_000)
      expect(yield* accounts.get(account.id)).toEqual(account)
    }).pipe(Effect.provide(withAccounts())))

  it.effect("authenticates a key into the caller it stands for", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts.Accounts
      const { account } = yield* accounts.create({ name: "acme" })
      const key = yield* accounts.createKey(account.id, { name: "ro", scopes: ["jobs:read"], usageLimit: 7 })
      expect(yield* accounts.authenticate(key.secret)).toEqual({
        accountId: account.id,
        apiKeyId: key.record.id,
        scopes: ["jobs:read"],
        keyUsageLimit: 7
      })
    }).pipe(Effect.provide(withAccounts())))

  it.effect("refuses malformed and unknown keys alike", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts.Accounts
      yield* accounts.create({ name: "acme" })
      for (const presented of ["", "tm_short", `sk_${"a".repeat(43)}`, `tm_${"a".repeat(43)}`]) {
        const error = yield* Effect.flip(accounts.authenticate(presented))
        expect(error).toBeInstanceOf(Errors.AuthRequired)
      }
    }).pipe(Effect.provide(withAccounts())))

  it.effect("refuses a revoked key with the reason", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts.Accounts
      const { account, key } = yield* accounts.create({ name: "acme" })
      expect(yield* accounts.revokeKey(account.id, key.record.id)).toBe(true)
      const error = yield* Effect.flip(accounts.authenticate(key.secret))
      expect(error).toBeInstanceOf(Errors.PermissionDenied)
      expect(error.message).toMatch(/revoked.*create a new key/)
      expect(error.message).not.toContain(key.secret)
    }).pipe(Effect.provide(withAccounts())))

  it.effect("limits a key's requests per minute and says when to retry", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts.Accounts
      const { account } = yield* accounts.create({ name: "acme" })
      const key = yield* accounts.createKey(account.id, { rateLimitPerMinute: 2 })
      yield* accounts.authenticate(key.secret)
      yield* TestClock.adjust("20 seconds")
      yield* accounts.authenticate(key.secret)
      const error = yield* Effect.flip(accounts.authenticate(key.secret))
      expect(error).toBeInstanceOf(Errors.ApiKeyRateLimited)
      expect(error.retryAfterSeconds).toBe(40)
      yield* TestClock.adjust("40 seconds")
      yield* accounts.authenticate(key.secret)
    }).pipe(Effect.provide(withAccounts())))

  it.effect("keys without their own limit get the configured default", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts.Accounts
      const { key } = yield* accounts.create({ name: "acme" })
      yield* accounts.authenticate(key.secret)
      yield* TestClock.adjust("59500 millis")
      const error = yield* Effect.flip(accounts.authenticate(key.secret))
      expect(error).toBeInstanceOf(Errors.ApiKeyRateLimited)
      expect(error.retryAfterSeconds).toBe(1)
    }).pipe(Effect.provide(withAccounts({ defaultRateLimitPerMinute: 1 }))))

  it.effect("compares the stored hash itself rather than trusting the store's lookup", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts.Accounts
      const { key } = yield* accounts.create({ name: "acme" })
      const error = yield* Effect.flip(accounts.authenticate(key.secret))
      expect(error).toBeInstanceOf(Errors.AuthRequired)
    }).pipe(Effect.provide(withStore((store) => ({
      ...store,
      authenticate: (hash, now) =>
        Effect.map(store.authenticate(hash, now), (found) =>
          found === undefined ? undefined : { ...found, key: { ...found.key, hash: "0".repeat(64) } })
    })))))

  it.effect("an unreachable store is AUTH_UNAVAILABLE", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts.Accounts
      const { key } = yield* accounts.create({ name: "acme" })
      const error = yield* Effect.flip(accounts.authenticate(key.secret))
      expect(error).toBeInstanceOf(Errors.AuthUnavailable)
    }).pipe(Effect.provide(withStore((store) => ({
      ...store,
      authenticate: () => Effect.fail(new StoreUnavailable({ message: "connection refused" }))
    })))))

  it.effect("an unknown account is AccountNotFound", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts.Accounts
      const missing = Ids.makeAccountId()
      expect(yield* Effect.flip(accounts.get(missing))).toEqual(new Accounts.AccountNotFound({ accountId: missing }))
      expect(yield* Effect.flip(accounts.createKey(missing))).toBeInstanceOf(Accounts.AccountNotFound)
    }).pipe(Effect.provide(withAccounts())))
})

/** Accounts over a memory store whose AccountStore is altered by `change`. */
const withStore = (change: (store: AccountStore["Service"]) => AccountStore["Service"]) =>
  Accounts.layer().pipe(
    Layer.provide(Layer.effect(AccountStore, Effect.map(AccountStore, change))),
    Layer.provide(MemoryStore.layer)
  )
