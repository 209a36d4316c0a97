/**
 * Accounts and API keys: the operator creates accounts and keys, callers authenticate with a
 * key. The secret is shown once at creation and never stored; see AccountStore for hashing.
 *
 * Key format: `tm_` followed by 43 base64url characters (32 random bytes).
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { Clock, Context, Data, Effect, Layer } from "effect"
import { AccountStore } from "./AccountStore.ts"
import type { Account, ApiKeyRecord } from "./AccountStore.ts"
import * as Errors from "./Errors.ts"
import * as Ids from "./Ids.ts"
import type { AccountId, ApiKeyId } from "./Ids.ts"
import { LedgerStore } from "./LedgerStore.ts"
import type { Micros } from "./Money.ts"
import * as Scopes from "./Scope.ts"
import type { Scope } from "./Scope.ts"
import type { StoreUnavailable } from "./StoreError.ts"

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

export class Accounts extends Context.Service<Accounts, {
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
  readonly revokeKey: (
    accountId: AccountId,
    keyId: ApiKeyId
  ) => Effect.Effect<boolean, StoreUnavailable>
  /**
   * Checks a presented key: hashes it, looks it up, compares in constant time, refuses revoked
   * keys (PERMISSION_DENIED) and keys past their per-minute rate (API_KEY_RATE_LIMITED with
   * retryAfterSeconds). An unknown or malformed key is AUTH_REQUIRED; an unreachable store is
   * AUTH_UNAVAILABLE. The secret is never logged or kept.
   */
  readonly authenticate: (
    presented: string
  ) => Effect.Effect<
    Caller,
    Errors.AuthRequired | Errors.PermissionDenied | Errors.ApiKeyRateLimited | Errors.AuthUnavailable
  >
}>()("@taskmeter/kernel/Accounts") {}

export interface Options {
  /** Requests per minute for keys made without their own rate limit. */
  readonly defaultRateLimitPerMinute: number
}

export const defaultOptions: Options = { defaultRateLimitPerMinute: 1200 }

/** `tm_` and 43 base64url characters: anything else is refused without asking the store. */
const KEY_FORMAT = /^tm_[A-Za-z0-9_-]{43}$/

/** How many characters of a key are kept to tell keys apart (`tm_` and four more). */
const DISPLAY_PREFIX_LENGTH = KEY_PREFIX.length + 4

const hashOf = (secret: string): string => createHash("sha256").update(secret).digest("hex")

const sameHash = (storedHex: string, computedHex: string): boolean => {
  const stored = Buffer.from(storedHex, "hex")
  const computed = Buffer.from(computedHex, "hex")
  return stored.length === computed.length && timingSafeEqual(stored, computed)
}

const authRequired = () =>
  new Errors.AuthRequired({
    message: "A valid API key is required: send it as `Authorization: Bearer <key>` or in the `x-api-key` header."
  })

export const make = (options: Options = defaultOptions): Effect.Effect<Accounts["Service"], never, AccountStore | LedgerStore> =>
  Effect.gen(function*() {
    const store = yield* AccountStore
    const ledger = yield* LedgerStore
    const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis))

    const get = (id: AccountId) =>
      Effect.flatMap(store.getAccount(id), (account) =>
        account === undefined ? Effect.fail(new AccountNotFound({ accountId: id })) : Effect.succeed(account))

    const newKey = (account: Account, keyOptions: KeyOptions, createdAt: Date) =>
      Effect.gen(function*() {
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

    const authenticate = (presented: string) =>
      Effect.gen(function*() {
        if (!KEY_FORMAT.test(presented)) return yield* authRequired()
        const hash = hashOf(presented)
        const at = yield* now
        const found = yield* store.authenticate(hash, at).pipe(
          Effect.mapError(() =>
            new Errors.AuthUnavailable({ message: "Authentication is temporarily unavailable; retry shortly." })
          )
        )
        if (found === undefined || !sameHash(found.key.hash, hash)) return yield* authRequired()
        const key = found.key
        if (key.revokedAt !== null) {
          return yield* new Errors.PermissionDenied({
            message: `This API key (${key.displayPrefix}...) was revoked on ${key.revokedAt.toISOString()}; create a new key.`
          })
        }
        const limit = key.rateLimitPerMinute ?? options.defaultRateLimitPerMinute
        if (found.requestsInWindow > limit) {
          return yield* new Errors.ApiKeyRateLimited({
            message: `This API key may make ${limit} requests per minute; retry after the time in Retry-After.`,
            retryAfterSeconds: Math.max(1, Math.ceil((found.windowResetsAt.getTime() - at.getTime()) / 1000))
          })
        }
        const caller: Caller = {
          accountId: key.accountId,
          apiKeyId: key.id,
          scopes: key.scopes,
          keyUsageLimit: key.usageLimit
        }
        return caller
      })

    return Accounts.of({
      create: ({ name, credits }) =>
        Effect.gen(function*() {
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
      revokeKey: (accountId, keyId) => Effect.flatMap(now, (at) => store.revokeApiKey(accountId, keyId, at)),
      authenticate
    })
  })

export const layer = (options: Options = defaultOptions): Layer.Layer<Accounts, never, AccountStore | LedgerStore> =>
  Layer.effect(Accounts, make(options))
