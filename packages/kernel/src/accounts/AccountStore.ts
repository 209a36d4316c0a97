/**
 * Storage port for accounts and their API keys.
 *
 * Keys are stored only as a SHA-256 hash of the secret (the secret has 256 bits of entropy,
 * so a plain hash is not brute-forceable); `authenticate` looks a key up by that hash and the
 * kernel compares it again in constant time. A store never sees a secret.
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { AccountId, ApiKeyId } from "../domain/Ids.ts"
import type { Scope } from "./Scope.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"

export interface Account {
  readonly id: AccountId
  readonly name: string
  readonly createdAt: Date
}

export interface ApiKeyRecord {
  readonly id: ApiKeyId
  readonly accountId: AccountId
  readonly name: string
  /** The first characters of the key (`tm_` and a few more), safe to show so an owner can tell keys apart. */
  readonly displayPrefix: string
  /** Lower-case hex SHA-256 of the whole key. */
  readonly hash: string
  readonly scopes: ReadonlyArray<Scope>
  readonly createdAt: Date
  readonly revokedAt: Date | null
  /** Requests per minute this key may make; null = the server's default. */
  readonly rateLimitPerMinute: number | null
  /** Billable submissions (tasks and chat requests) this key may ever make; null = unlimited. */
  readonly usageLimit: number | null
  readonly usageCount: number
}

export interface Authenticated {
  readonly key: ApiKeyRecord
  /** Requests counted in the key's current one-minute window, this one included. */
  readonly requestsInWindow: number
  readonly windowResetsAt: Date
}

export class AccountStore extends Context.Service<
  AccountStore,
  {
    readonly createAccount: (account: Account) => Effect.Effect<Account, StoreUnavailable>
    readonly getAccount: (id: AccountId) => Effect.Effect<Account | undefined, StoreUnavailable>
    readonly listAccounts: Effect.Effect<ReadonlyArray<Account>, StoreUnavailable>
    /** Fails with a defect if the account does not exist: callers create keys for accounts they just read. */
    readonly insertApiKey: (key: ApiKeyRecord) => Effect.Effect<void, StoreUnavailable>
    readonly listApiKeys: (accountId: AccountId) => Effect.Effect<ReadonlyArray<ApiKeyRecord>, StoreUnavailable>
    /** Marks the key revoked; false when the account has no such key. Revoking twice keeps the first time. */
    readonly revokeApiKey: (accountId: AccountId, keyId: ApiKeyId, at: Date) => Effect.Effect<boolean, StoreUnavailable>
    /**
     * Sets how many days the account's results are kept (null: the service's default,
     * Retention); results stored from then on expire by it. False when there is no such account.
     */
    readonly setResultRetention: (accountId: AccountId, days: number | null) => Effect.Effect<boolean, StoreUnavailable>
    /** The days the operator set for the account; null for the default or no such account. */
    readonly getResultRetention: (accountId: AccountId) => Effect.Effect<number | null, StoreUnavailable>
    /**
     * Finds the key with this hash and, atomically with the read, counts one request in its
     * fixed one-minute window (the window restarts when `now` is past its end). Revoked keys are
     * returned too, so the caller can say why they are refused; unknown hashes give undefined.
     * The count holds across processes sharing the store.
     */
    readonly authenticate: (hash: string, now: Date) => Effect.Effect<Authenticated | undefined, StoreUnavailable>
  }
>()("@taskmeter/kernel/AccountStore") {}
