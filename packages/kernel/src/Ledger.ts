/**
 * The Ledger service: credits of an account and their history. Every change is an immutable
 * entry (see LedgerStore for the kinds and their effects); task charges and releases are made
 * by the TaskStore transitions that end a task, chat ones by ChatBilling.
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { AccountNotFound } from "./Accounts.ts"
import type * as Errors from "./Errors.ts"
import type { AccountId } from "./Ids.ts"
import type { AuditFinding, Balances, LedgerEntry, Movement } from "./LedgerStore.ts"
import type { Micros } from "./Money.ts"
import type { StoreUnavailable } from "./StoreError.ts"

export interface Usage {
  readonly balances: Balances
  readonly entries: ReadonlyArray<LedgerEntry>
  readonly nextCursor: string | null
}

export interface ChangeOptions {
  readonly note?: string | undefined
  readonly externalRef?: string | undefined
}

export class Ledger extends Context.Service<Ledger, {
  readonly grant: (
    accountId: AccountId,
    amount: Micros,
    options?: ChangeOptions
  ) => Effect.Effect<Movement, AccountNotFound | StoreUnavailable>
  /** A payment refund: may put the account into payment review (PAYMENT_REVIEW_REQUIRED on submit). */
  readonly refund: (
    accountId: AccountId,
    amount: Micros,
    options?: ChangeOptions
  ) => Effect.Effect<Movement, AccountNotFound | StoreUnavailable>
  /** An operator correction; `amount` may be negative. */
  readonly adjust: (
    accountId: AccountId,
    amount: number,
    options?: ChangeOptions
  ) => Effect.Effect<Movement, AccountNotFound | StoreUnavailable>
  readonly balances: (accountId: AccountId) => Effect.Effect<Balances, AccountNotFound | StoreUnavailable>
  /** Balances and the entries newest first; limit 1..100. An invalid or foreign cursor is REQUEST_NOT_FOUND. */
  readonly usage: (
    accountId: AccountId,
    page: { readonly limit: number; readonly before?: string | undefined }
  ) => Effect.Effect<Usage, AccountNotFound | Errors.RequestNotFound | StoreUnavailable>
  /** Recomputes every account from the journal; an empty list means the books balance. */
  readonly audit: Effect.Effect<ReadonlyArray<AuditFinding>, StoreUnavailable>
}>()("@taskmeter/kernel/Ledger") {}
