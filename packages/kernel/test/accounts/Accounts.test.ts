import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as Accounts from "../../src/accounts/Accounts.ts"
import { AccountStore } from "../../src/accounts/AccountStore.ts"
import * as Errors from "../../src/domain/Errors.ts"
import * as Ids from "../../src/domain/Ids.ts"
import * as KeyCheck from "../../src/accounts/KeyCheck.ts"
import { Ledger } from "../../src/ledger/Ledger.ts"
import * as LedgerModule from "../../src/ledger/Ledger.ts"
import * as Money from "../../src/domain/Money.ts"
import * as Scopes from "../../src/accounts/Scope.ts"
import { StoreUnavailable } from "../../src/domain/StoreError.ts"
import { makeKey } from "../../src/testing/Fixtures.ts"

const withAccounts = (options?: Accounts.Options) =>
  Layer.mergeAll(Accounts.layer(options), LedgerModule.layer).pipe(Layer.provideMerge(MemoryStore.layer))

describe("Accounts", () => {
  it.effect("creates an account with a key shown once and opening credits", () =>
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const { account, key } = yield* accounts.create({ name: "acme", credits: Money.micros(5_000_000) })
      expect(key.secret).toMatch(/^tm_[A-Za-z0-9_-]{43}$/)
      expect(key.record.hash).toBe(createHash("sha256").update(key.secret).digest("hex"))
      expect(key.record.displayPrefix).toBe(key.secret.slice(0, 7))
      expect(key.record.scopes).toEqual([
        "jobs:create",
        "jobs:read",
        "usage:read",
        "chat:create",
        "billing:create",
        "webhooks:manage"
      ])
      expect(JSON.stringify(yield* accounts.listKeys(account.id))).not.toContain(key.secret)
      expect((yield* (yield* Ledger).balances(account.id)).balanceMicros).toBe(5_000_000)
      expect(yield* accounts.get(account.id)).toEqual(account)
    }).pipe(Effect.provide(withAccounts()))
  )

  it.effect("authenticates a key into the caller it stands for", () =>
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const { account } = yield* accounts.create({ name: "acme" })
      const key = yield* accounts.createKey(account.id, { name: "ro", scopes: ["jobs:read"], usageLimit: 7 })
      expect(yield* accounts.authenticate(key.secret)).toEqual({
        accountId: account.id,
        apiKeyId: key.record.id,
        scopes: ["jobs:read"],
        keyUsageLimit: 7
      })
    }).pipe(Effect.provide(withAccounts()))
  )

  it.effect("refuses malformed and unknown keys alike, saying what to send and naming no header", () =>
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      yield* accounts.create({ name: "acme" })
      for (const presented of ["", "tm_short", `sk_${"a".repeat(43)}`, `tm_${"a".repeat(43)}`]) {
        const error = yield* Effect.flip(accounts.authenticate(presented))
        expect(error).toBeInstanceOf(Errors.AuthRequired)
        expect(error.message).toContain("send a valid key")
        expect(error.message).not.toMatch(/authorization|x-api-key/i)
      }
    }).pipe(Effect.provide(withAccounts()))
  )

  it.effect("refuses a revoked key with the reason", () =>
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const { account, key } = yield* accounts.create({ name: "acme" })
      expect(yield* accounts.revokeKey(account.id, key.record.id)).toBe(true)
      const error = yield* Effect.flip(accounts.authenticate(key.secret))
      expect(error).toBeInstanceOf(Errors.PermissionDenied)
      expect(error.message).toMatch(/revoked.*create a new key/)
      expect(error.message).not.toContain(key.secret)
    }).pipe(Effect.provide(withAccounts()))
  )

  it.effect("limits a key's requests per minute and says when to retry", () =>
    Effect.gen(function* () {
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
    }).pipe(Effect.provide(withAccounts()))
  )

  it.effect("keys without their own limit get the configured default", () =>
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const { key } = yield* accounts.create({ name: "acme" })
      yield* accounts.authenticate(key.secret)
      yield* TestClock.adjust("59500 millis")
      const error = yield* Effect.flip(accounts.authenticate(key.secret))
      expect(error).toBeInstanceOf(Errors.ApiKeyRateLimited)
      expect(error.retryAfterSeconds).toBe(1)
    }).pipe(Effect.provide(withAccounts({ defaultRateLimitPerMinute: 1 })))
  )

  it.effect("compares the stored hash itself rather than trusting the store's lookup", () =>
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const { key } = yield* accounts.create({ name: "acme" })
      const error = yield* Effect.flip(accounts.authenticate(key.secret))
      expect(error).toBeInstanceOf(Errors.AuthRequired)
    }).pipe(
      Effect.provide(
        withStore((store) => ({
          ...store,
          authenticate: (hash, now) =>
            Effect.map(store.authenticate(hash, now), (found) =>
              found === undefined ? undefined : { ...found, key: { ...found.key, hash: "0".repeat(64) } }
            )
        }))
      )
    )
  )

  it.effect("an unreachable store is AUTH_UNAVAILABLE", () =>
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const { key } = yield* accounts.create({ name: "acme" })
      const error = yield* Effect.flip(accounts.authenticate(key.secret))
      expect(error).toBeInstanceOf(Errors.AuthUnavailable)
    }).pipe(
      Effect.provide(
        withStore((store) => ({
          ...store,
          authenticate: () => Effect.fail(new StoreUnavailable({ message: "connection refused" }))
        }))
      )
    )
  )

  it.effect("an unknown account is AccountNotFound", () =>
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const missing = Ids.makeAccountId()
      expect(yield* Effect.flip(accounts.get(missing))).toEqual(new Accounts.AccountNotFound({ accountId: missing }))
      expect(yield* Effect.flip(accounts.createKey(missing))).toBeInstanceOf(Accounts.AccountNotFound)
    }).pipe(Effect.provide(withAccounts()))
  )
})

describe("Accounts.authenticateWithin", () => {
  /** A write that finds the key as the store's authenticate does and answers `result`, keeping each check. */
  const recording = <A>(result: A) => {
    const checks: Array<KeyCheck.KeyCheck> = []
    const write = (check: KeyCheck.KeyCheck) =>
      AccountStore.use((store) => store.authenticate(check.hash, check.now)).pipe(
        Effect.map((found) => (checks.push(check), [found, result] as const))
      )
    return { checks, write }
  }

  it.effect("a passing key gives its caller and the write's result; the write gets the key's check", () =>
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const { account } = yield* accounts.create({ name: "acme" })
      const key = yield* accounts.createKey(account.id, { usageLimit: 3 })
      yield* TestClock.adjust("5 seconds")
      const { checks, write } = recording("written")
      expect(yield* accounts.authenticateWithin(key.secret, "jobs:create", write)).toEqual({
        caller: { accountId: account.id, apiKeyId: key.record.id, scopes: Scopes.all, keyUsageLimit: 3 },
        result: "written"
      })
      expect(checks).toEqual([
        {
          hash: createHash("sha256").update(key.secret).digest("hex"),
          now: new Date(5_000),
          scope: "jobs:create",
          defaultRateLimitPerMinute: 7
        }
      ])
    }).pipe(Effect.provide(withAccounts({ defaultRateLimitPerMinute: 7 })))
  )

  it.effect("a refused key is the refusal, whatever the write answered", () =>
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const { account, key } = yield* accounts.create({ name: "acme" })
      const readOnly = yield* accounts.createKey(account.id, { scopes: Scopes.readOnly })
      const limited = yield* accounts.createKey(account.id, { rateLimitPerMinute: 1 })
      const { checks, write } = recording("written")
      const within = (secret: string) => Effect.flip(accounts.authenticateWithin(secret, "jobs:create", write))

      expect(yield* within(`tm_${"a".repeat(43)}`)).toBeInstanceOf(Errors.AuthRequired)
      const scope = yield* within(readOnly.secret)
      expect(scope).toBeInstanceOf(Errors.InsufficientScope)
      expect(scope.message).toContain("jobs:create")
      yield* accounts.authenticateWithin(limited.secret, "jobs:create", write)
      expect(yield* within(limited.secret)).toMatchObject({ _tag: "ApiKeyRateLimited", retryAfterSeconds: 60 })
      yield* accounts.revokeKey(account.id, key.record.id)
      expect(yield* within(key.secret)).toBeInstanceOf(Errors.PermissionDenied)
      expect(checks.length).toBe(5)
    }).pipe(Effect.provide(withAccounts()))
  )

  it.effect("refuses for the first reason: revoked, then over the rate, then the scope", () =>
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const { account } = yield* accounts.create({ name: "acme" })
      const options = { scopes: Scopes.readOnly, rateLimitPerMinute: 1 }
      const revoked = yield* accounts.createKey(account.id, options)
      const limited = yield* accounts.createKey(account.id, options)
      yield* accounts.revokeKey(account.id, revoked.record.id)
      const { write } = recording("written")
      const within = (secret: string) => Effect.flip(accounts.authenticateWithin(secret, "jobs:create", write))
      expect(yield* within(limited.secret)).toBeInstanceOf(Errors.InsufficientScope)
      // Over its rate now as well: the rate is said first.
      expect(yield* within(limited.secret)).toBeInstanceOf(Errors.ApiKeyRateLimited)
      yield* within(revoked.secret)
      // Revoked, over its rate and lacking the scope: the revocation is said first.
      expect(yield* within(revoked.secret)).toBeInstanceOf(Errors.PermissionDenied)
    }).pipe(Effect.provide(withAccounts()))
  )

  it.effect("a malformed key is AUTH_REQUIRED without calling the write; the write's own failure is the answer", () =>
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const { key } = yield* accounts.create({ name: "acme" })
      let writes = 0
      const counted = () => Effect.sync(() => (writes++, [undefined, "written"] as const))
      for (const presented of ["", "tm_short", `sk_${"a".repeat(43)}`]) {
        expect(yield* Effect.flip(accounts.authenticateWithin(presented, "jobs:create", counted))).toBeInstanceOf(
          Errors.AuthRequired
        )
      }
      expect(writes).toBe(0)

      const outage = new StoreUnavailable({ message: "connection refused" })
      expect(yield* Effect.flip(accounts.authenticateWithin(key.secret, "jobs:create", () => Effect.fail(outage)))).toBe(outage)
    }).pipe(Effect.provide(withAccounts()))
  )
})

describe("KeyCheck.refusal", () => {
  const key = makeKey(Ids.makeAccountId(), { scopes: ["jobs:read"], rateLimitPerMinute: 2, revokedAt: new Date(0) })
  const found = { key, requestsInWindow: 3, windowResetsAt: new Date(60_000) }
  const check = { hash: key.hash, now: new Date(1_000), scope: "jobs:create", defaultRateLimitPerMinute: 10 } as const

  it("refuses in order: unknown, revoked, over the rate, lacking the scope", () => {
    expect(KeyCheck.refusal(undefined, check)).toBe("UnknownKey")
    expect(KeyCheck.refusal(found, { ...check, hash: "0".repeat(64) })).toBe("UnknownKey")
    expect(KeyCheck.refusal(found, check)).toBe("Revoked")
    const live = { ...found, key: { ...key, revokedAt: null } }
    expect(KeyCheck.refusal(live, check)).toBe("RateLimited")
    expect(KeyCheck.refusal({ ...live, requestsInWindow: 2 }, check)).toBe("MissingScope")
    expect(KeyCheck.refusal({ ...live, requestsInWindow: 2 }, { ...check, scope: undefined })).toBeUndefined()
    expect(KeyCheck.refusal({ ...live, requestsInWindow: 2 }, { ...check, scope: "jobs:read" })).toBeUndefined()
  })

  it("counts the request itself against the key's rate, else the default", () => {
    const open = { ...key, revokedAt: null, scopes: Scopes.all }
    expect(KeyCheck.refusal({ ...found, key: open, requestsInWindow: 2 }, check)).toBeUndefined()
    expect(KeyCheck.refusal({ ...found, key: open, requestsInWindow: 3 }, check)).toBe("RateLimited")
    const defaulted = { ...open, rateLimitPerMinute: null }
    expect(KeyCheck.refusal({ ...found, key: defaulted, requestsInWindow: 10 }, check)).toBeUndefined()
    expect(KeyCheck.refusal({ ...found, key: defaulted, requestsInWindow: 11 }, check)).toBe("RateLimited")
  })
})

/** Accounts over a memory store whose AccountStore is altered by `change`. */
const withStore = (change: (store: AccountStore["Service"]) => AccountStore["Service"]) =>
  Accounts.layer().pipe(
    Layer.provide(Layer.effect(AccountStore, Effect.map(AccountStore, change))),
    Layer.provide(MemoryStore.layer)
  )
