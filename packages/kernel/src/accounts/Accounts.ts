/**
 * Accounts and API keys: the operator creates accounts and keys, callers authenticate with a
 * key. The secret is shown once at creation and never stored; see AccountStore for hashing.
 *
 * Key format: `tm_` followed by 43 base64url characters (32 random bytes).
 */
import { createHash, randomBytes } from "node:crypto"
import { Clock, Context, Data, Effect, Layer } from "effect"
import { AccountStore } from "./AccountStore.ts"
import type { Account, ApiKeyRecord, Authenticated } from "./AccountStore.ts"
import * as Errors from "../domain/Errors.ts"
import * as Ids from "../domain/Ids.ts"
import type { AccountId, ApiKeyId } from "../domain/Ids.ts"
import * as KeyCache from "./KeyCache.ts"
import * as KeyCheck from "./KeyCheck.ts"
import { LedgerStore } from "../ledger/LedgerStore.ts"
import type { Micros } from "../domain/Money.ts"
import * as Scopes from "./Scope.ts"
import type { Scope } from "./Scope.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"

export const KEY_PREFIX = "tm_"

/** Who is calling: the account every read and write is scoped to, and the key's powers. */
export interface Caller {
  readonly accountId: AccountId
  readonly apiKeyId: ApiKeyId | null
  readonly scopes: ReadonlyArray<Scope>
  readonly keyUsageLimit: number | null
}

export interface CreatedKey {
  readonly record: ApiKeyRecord
  /** The whole key; shown to the operator once. */
  readonly secret: string
}

export class AccountNotFound extends Data.TaggedError("AccountNotFound")<{ readonly accountId: string }> {}

export interface KeyOptions {
  readonly name?: string | undefined
  readonly scopes?: ReadonlyArray<Scope> | undefined
  readonly rateLimitPerMinute?: number | null | undefined
  readonly usageLimit?: number | null | undefined
}

export type AuthenticationError =
  | Errors.AuthRequired
  | Errors.PermissionDenied
  | Errors.ApiKeyRateLimited
  | Errors.AuthUnavailable

export class Accounts extends Context.Service<
  Accounts,
  {
    /** Creates an account with a first key (all scopes) and, when given, an opening grant. */
    readonly create: (options: {
      readonly name: string
      readonly credits?: Micros | undefined
    }) => Effect.Effect<{ readonly account: Account; readonly key: CreatedKey }, StoreUnavailable>
    readonly get: (id: AccountId) => Effect.Effect<Account, AccountNotFound | StoreUnavailable>
    readonly list: Effect.Effect<ReadonlyArray<Account>, StoreUnavailable>
    readonly createKey: (
      accountId: AccountId,
      options?: KeyOptions
    ) => Effect.Effect<CreatedKey, AccountNotFound | StoreUnavailable>
    readonly listKeys: (accountId: AccountId) => Effect.Effect<ReadonlyArray<ApiKeyRecord>, StoreUnavailable>
    readonly revokeKey: (accountId: AccountId, keyId: ApiKeyId) => Effect.Effect<boolean, StoreUnavailable>
    /**
     * Checks a presented key: hashes it, looks it up, compares in constant time, refuses revoked
     * keys (PERMISSION_DENIED) and keys past their per-minute rate (API_KEY_RATE_LIMITED with
     * retryAfterSeconds). An unknown or malformed key is AUTH_REQUIRED; an unreachable store is
     * AUTH_UNAVAILABLE. The secret is never logged or kept.
     */
    readonly authenticate: (presented: string) => Effect.Effect<Caller, AuthenticationError>
    /**
     * authenticate without a store call for a key this process verified in the last
     * `keyCacheTtlMs` (KeyCache): its per-minute rate is then counted in this process, and a
     * revocation elsewhere is seen within the TTL. Keys with a usage limit always ask the store.
     */
    readonly authenticateCached: (presented: string) => Effect.Effect<Caller, AuthenticationError>
    /**
     * Authenticates a presented key for `scope` through a store write that checks the key itself
     * and writes only if it passes (TaskStore.admit of a key's request): `write` gets the KeyCheck and answers
     * what the store found for the key (undefined for an unknown hash) with its own result. The
     * answers are authenticate's, then INSUFFICIENT_SCOPE; the result is the write's, given only
     * when the key passed. A malformed key is refused before `write` runs.
     */
    readonly authenticateWithin: <A, E, R>(
      presented: string,
      scope: Scope,
      write: (check: KeyCheck.KeyCheck) => Effect.Effect<readonly [Authenticated | undefined, A], E, R>
    ) => Effect.Effect<{ readonly caller: Caller; readonly result: A }, AuthenticationError | Errors.InsufficientScope | E, R>
  }
>()("@taskmeter/kernel/Accounts") {}

export interface Options {
  /** Requests per minute for keys made without their own rate limit. */
  readonly defaultRateLimitPerMinute: number
  /** How long authenticateCached serves a key verified in the store; 0 = always ask the store. Default 5 s. */
  readonly keyCacheTtlMs?: number | undefined
  /** How many keys authenticateCached keeps at most. Default 10,000. */
  readonly keyCacheEntries?: number | undefined
}

export const defaultOptions = { defaultRateLimitPerMinute: 1200, keyCacheTtlMs: 5_000, keyCacheEntries: 10_000 }

/** `tm_` and 43 base64url characters: anything else is refused without asking the store. */
const KEY_FORMAT = /^tm_[A-Za-z0-9_-]{43}$/

/** How many characters of a key are kept to tell keys apart (`tm_` and four more). */
const DISPLAY_PREFIX_LENGTH = KEY_PREFIX.length + 4

const hashOf = (secret: string): string => createHash("sha256").update(secret).digest("hex")

/** INSUFFICIENT_SCOPE for a key without `scope`. */
export const insufficientScope = (scope: Scope) =>
  new Errors.InsufficientScope({
    message: `This API key lacks the scope ${scope}, which this request needs; use a key that has it.`
  })

/** AUTH_UNAVAILABLE: the store that checks keys could not be reached. */
export const authUnavailable = () =>
  new Errors.AuthUnavailable({ message: "Authentication is temporarily unavailable; retry shortly." })

const authRequired = () =>
  new Errors.AuthRequired({
    message: "This API key is not a key of this service (malformed, unknown or deleted); send a valid key."
  })

export const make = (options: Options = defaultOptions): Effect.Effect<Accounts["Service"], never, AccountStore | LedgerStore> =>
  Effect.gen(function* () {
    const store = yield* AccountStore
    const ledger = yield* LedgerStore
    const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis))
    const cache = KeyCache.make({
      ttlMs: options.keyCacheTtlMs ?? defaultOptions.keyCacheTtlMs,
      maxEntries: options.keyCacheEntries ?? defaultOptions.keyCacheEntries
    })

    const get = (id: AccountId) =>
      Effect.flatMap(store.getAccount(id), (account) =>
        account === undefined ? Effect.fail(new AccountNotFound({ accountId: id })) : Effect.succeed(account)
      )

    const newKey = (account: Account, keyOptions: KeyOptions, createdAt: Date) =>
      Effect.gen(function* () {
        const secret = `${KEY_PREFIX}${randomBytes(32).toString("base64url")}`
        const record: ApiKeyRecord = {
          id: Ids.makeApiKeyId(),
          accountId: account.id,
          name: keyOptions.name ?? "default",
          displayPrefix: secret.slice(0, DISPLAY_PREFIX_LENGTH),
          hash: hashOf(secret),
          scopes: keyOptions.scopes ?? Scopes.all,
          createdAt,
          revokedAt: null,
          rateLimitPerMinute: keyOptions.rateLimitPerMinute ?? null,
          usageLimit: keyOptions.usageLimit ?? null,
          usageCount: 0
        }
        yield* store.insertApiKey(record)
        return { record, secret }
      })

    /** The answer for what the store found: the caller, or why the key is refused. */
    const judge = (
      found: Authenticated | undefined,
      check: Omit<KeyCheck.KeyCheck, "scope"> & { readonly scope?: Scope | undefined }
    ): Effect.Effect<Caller, AuthenticationError | Errors.InsufficientScope> => {
      const refusal = KeyCheck.refusal(found, check)
      if (found === undefined || refusal === "UnknownKey") return authRequired()
      switch (refusal) {
        case undefined:
          return Effect.succeed(callerOf(found))
        case "Revoked":
          return new Errors.PermissionDenied({
            message:
              `This API key (${found.key.displayPrefix}...) was revoked on ${found.key.revokedAt?.toISOString()}; ` +
              "create a new key."
          })
        case "RateLimited":
          return new Errors.ApiKeyRateLimited({
            message:
              `This API key may make ${KeyCheck.rateLimitOf(found, check)} requests per minute; ` +
              "retry after the time in Retry-After.",
            retryAfterSeconds: Math.max(1, Math.ceil((found.windowResetsAt.getTime() - check.now.getTime()) / 1000))
          })
        case "MissingScope":
          return insufficientScope(check.scope!)
      }
    }

    const callerOf = (found: Authenticated): Caller => ({
      accountId: found.key.accountId,
      apiKeyId: found.key.id,
      scopes: found.key.scopes,
      keyUsageLimit: found.key.usageLimit
    })

    /** The check of a well-formed key; AUTH_REQUIRED for anything else, before the store is asked. */
    const checkOf = <S extends Scope | undefined>(presented: string, scope: S) =>
      KEY_FORMAT.test(presented)
        ? Effect.map(now, (at) => ({
            hash: hashOf(presented),
            now: at,
            scope,
            defaultRateLimitPerMinute: options.defaultRateLimitPerMinute
          }))
        : authRequired()

    const authenticate = Effect.fnUntraced(function* (presented: string) {
      const check = yield* checkOf(presented, undefined)
      const found = yield* store.authenticate(check.hash, check.now).pipe(Effect.mapError(authUnavailable))
      // Without a scope the check never answers INSUFFICIENT_SCOPE: scopes are the caller's to check.
      return yield* Effect.catchTag(judge(found, check), "InsufficientScope", Effect.die)
    })

    const authenticateCached = Effect.fnUntraced(function* (presented: string) {
      const check = yield* checkOf(presented, undefined)
      const nowMs = check.now.getTime()
      const cached = cache.count(check.hash, nowMs)
      const found =
        cached ??
        (yield* store.authenticate(check.hash, check.now).pipe(
          Effect.mapError(authUnavailable),
          Effect.map((fromStore) =>
            fromStore === undefined || fromStore.key.usageLimit !== null || !KeyCheck.sameHash(fromStore.key.hash, check.hash)
              ? fromStore
              : cache.verified(check.hash, fromStore, nowMs)
          )
        ))
      return yield* Effect.catchTag(judge(found, check), "InsufficientScope", Effect.die)
    })

    const authenticateWithin = Effect.fnUntraced(function* <A, E, R>(
      presented: string,
      scope: Scope,
      write: (check: KeyCheck.KeyCheck) => Effect.Effect<readonly [Authenticated | undefined, A], E, R>
    ) {
      const check = yield* checkOf(presented, scope)
      const [found, result] = yield* write(check)
      const caller = yield* judge(found, check)
      return { caller, result }
    })

    return Accounts.of({
      create: ({ name, credits }) =>
        Effect.gen(function* () {
          const createdAt = yield* now
          const account = yield* store.createAccount({ id: Ids.makeAccountId(), name, createdAt })
          const key = yield* newKey(account, {}, createdAt)
          if (credits !== undefined && credits > 0) {
            yield* ledger.grant({ accountId: account.id, amountMicros: credits, note: "opening credits" })
          }
          return { account, key }
        }),
      get,
      list: store.listAccounts,
      createKey: (accountId, keyOptions = {}) =>
        Effect.flatMap(get(accountId), (account) => Effect.flatMap(now, (at) => newKey(account, keyOptions, at))),
      listKeys: store.listApiKeys,
      revokeKey: (accountId, keyId) =>
        Effect.flatMap(now, (at) => store.revokeApiKey(accountId, keyId, at)).pipe(
          Effect.tap(() => Effect.sync(() => cache.forget(keyId)))
        ),
      authenticate,
      authenticateCached,
      authenticateWithin
    })
  })

export const layer = (options: Options = defaultOptions): Layer.Layer<Accounts, never, AccountStore | LedgerStore> =>
  Layer.effect(Accounts, make(options))
