/**
 * The Ledger service: credits of an account and their history. Every change is an immutable
 * entry (see LedgerStore for the kinds and their effects); task charges and releases are made
 * by the TaskStore transitions that end a task, chat ones by ChatBilling.
 */
import { Context, Effect, Layer } from "effect"
import { AccountNotFound } from "../accounts/Accounts.ts"
import * as Errors from "../domain/Errors.ts"
import { isLedgerEntryId } from "../domain/Ids.ts"
import type { AccountId } from "../domain/Ids.ts"
import { LedgerStore } from "./LedgerStore.ts"
import type { AuditFinding, Balances, CreditChange, LedgerEntry, Movement } from "./LedgerStore.ts"
import type { Micros } from "../domain/Money.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"

export interface Usage {
  readonly balances: Balances
  readonly entries: ReadonlyArray<LedgerEntry>
  readonly nextCursor: string | null
}

export interface ChangeOptions {
  readonly note?: string | undefined
  readonly externalRef?: string | undefined
}

export class Ledger extends Context.Service<
  Ledger,
  {
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
  }
>()("@taskmeter/kernel/Ledger") {}

/** The largest page `usage` serves; a limit outside 1..100 is clamped into that range. */
export const MAX_PAGE = 100

export const make: Effect.Effect<Ledger["Service"], never, LedgerStore> = Effect.gen(function* () {
  const store = yield* LedgerStore

  const found =
    <A>(accountId: AccountId) =>
    (value: A | undefined) =>
      value === undefined ? Effect.fail(new AccountNotFound({ accountId })) : Effect.succeed(value)

  const change =
    (write: (change: CreditChange) => Effect.Effect<Movement | undefined, StoreUnavailable>) =>
    (accountId: AccountId, amount: number, options: ChangeOptions = {}) =>
      Effect.flatMap(
        write({ accountId, amountMicros: amount, note: options.note ?? null, externalRef: options.externalRef }),
        found<Movement>(accountId)
      )

  const balances = (accountId: AccountId) => Effect.flatMap(store.balances(accountId), found<Balances>(accountId))

  return Ledger.of({
    grant: change(store.grant),
    refund: change(store.refund),
    adjust: change(store.adjust),
    balances,
    usage: (accountId, page) =>
      Effect.gen(function* () {
        const current = yield* balances(accountId)
        const limit = Math.min(MAX_PAGE, Math.max(1, Math.trunc(page.limit)))
        // A cursor that is no entry id is answered like an unknown one, without asking the store.
        const entries =
          page.before === undefined || isLedgerEntryId(page.before)
            ? yield* store.entries(accountId, { limit, before: page.before })
            : undefined
        if (entries === undefined) {
          return yield* new Errors.RequestNotFound({
            message: "No such page of the ledger: pass a nextCursor this account received, or none for the newest entries."
          })
        }
        return { balances: current, entries: entries.entries, nextCursor: entries.nextCursor }
      }),
    audit: store.audit
  })
})

export const layer: Layer.Layer<Ledger, never, LedgerStore> = Layer.effect(Ledger, make)
