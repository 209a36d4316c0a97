/**
 * Accounts and API keys: the operator creates accounts and keys, callers authenticate with a
 * key. The secret is shown once at creation and never stored; see AccountStore for hashing.
 *
 * Key format: `tm_` followed by 43 base64url characters (32 random bytes).
 */
import type { Effect } from "effect"
import { Context, Data } from "effect"
import type { Account, ApiKeyRecord } from "./AccountStore.ts"
import type * as Errors from "./Errors.ts"
import type { AccountId, ApiKeyId } from "./Ids.ts"
import type { Micros } from "./Money.ts"
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
