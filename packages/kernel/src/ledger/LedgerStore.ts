/**
 * Storage port for the credit ledger: an append-only journal of entries per account, and the cached
 * balance and reserved figures it always adds up to (available = balance - reserved). grant,
 * refund and adjustment move the balance; reserve adds to reserved; charge takes from both (at
 * most the reservation) and release from reserved, each once per task or chat request. Every
 * method is one atomic unit in the store. Entry kinds: docs/decisions.md, Ledger and admission.
 * `spend` reads an account's charges per UTC day and model from a rollup the store keeps with
 * each charge, in the same unit: its cost does not grow with the journal.
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { AccountId, ChatRequestId, LedgerEntryId, TaskId } from "../domain/Ids.ts"
import type { Micros } from "../domain/Money.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"

export type EntryKind = "grant" | "reserve" | "charge" | "release" | "refund" | "adjustment"

export interface LedgerEntry {
  /** `entry_` and a UUID v7: an entry made in a later millisecond has an id that sorts after. */
  readonly id: LedgerEntryId
  readonly accountId: AccountId
  readonly kind: EntryKind
  /** Non-negative except for adjustments. */
  readonly amountMicros: number
  readonly taskId: TaskId | null
  readonly chatRequestId: ChatRequestId | null
  readonly note: string | null
  readonly createdAt: Date
}

export interface Balances {
  /** May fall below zero after a refund. */
  readonly balanceMicros: number
  readonly reservedMicros: Micros
  /** balance - reserved; negative while a refund is uncovered. */
  readonly availableMicros: number
  /** True from a refund that left balance below reserved (or below zero) until a grant covers it. */
  readonly paymentReview: boolean
}

export interface Movement {
  readonly entry: LedgerEntry
  readonly balances: Balances
}

export interface EntryPage {
  readonly entries: ReadonlyArray<LedgerEntry>
  /** Pass as `before` for the next (older) page; null at the end. */
  readonly nextCursor: string | null
}

/** One account whose cached figures disagree with its journal. */
export interface AuditFinding {
  readonly accountId: AccountId
  readonly cached: { readonly balanceMicros: number; readonly reservedMicros: number }
  readonly journal: { readonly balanceMicros: number; readonly reservedMicros: number }
}

/** One line of an account's spend: its charge entries of one UTC day for one model's tasks and chat requests. */
export interface SpendRow {
  readonly day: string
  readonly model: string
  readonly taskMicros: Micros
  readonly chatMicros: Micros
}

/** The widest spend range, in days (a year, a leap day included). */
export const SPEND_DAYS = 366

export interface CreditChange {
  readonly accountId: AccountId
  readonly amountMicros: number
  readonly note: string | null
  /**
   * An outside reference (a payment id) that makes the change idempotent: a second change of
   * the same kind with the same reference on the same account returns the first entry.
   */
  readonly externalRef?: string | undefined
}

export class LedgerStore extends Context.Service<
  LedgerStore,
  {
    /** undefined when the account does not exist. */
    readonly grant: (change: CreditChange) => Effect.Effect<Movement | undefined, StoreUnavailable>
    readonly refund: (change: CreditChange) => Effect.Effect<Movement | undefined, StoreUnavailable>
    readonly adjust: (change: CreditChange) => Effect.Effect<Movement | undefined, StoreUnavailable>
    readonly balances: (accountId: AccountId) => Effect.Effect<Balances | undefined, StoreUnavailable>
    /**
     * Newest first. An unknown or foreign cursor gives undefined (the caller answers 404), so a
     * cursor can never reveal another account's entries.
     */
    readonly entries: (
      accountId: AccountId,
      page: { readonly limit: number; readonly before?: string | undefined }
    ) => Effect.Effect<EntryPage | undefined, StoreUnavailable>
    /**
     * The account's charges dated in the UTC days [from, to] (`YYYY-MM-DD`, at most SPEND_DAYS days),
     * by day, then model (code points); days and models without a charge have no line.
     */
    readonly spend: (
      accountId: AccountId,
      range: { readonly from: string; readonly to: string }
    ) => Effect.Effect<ReadonlyArray<SpendRow>, StoreUnavailable>
    /** Recomputes every account from its journal and lists those whose cached figures differ. */
    readonly audit: Effect.Effect<ReadonlyArray<AuditFinding>, StoreUnavailable>
  }
>()("@taskmeter/kernel/LedgerStore") {}
