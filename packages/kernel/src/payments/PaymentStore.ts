/**
 * Storage port for payment events and the ledger entries they make. `receive` keeps an event
 * (once per processor and event id) and applies it in the same atomic unit, exactly once however
 * often and in whatever order it arrives, across processes: a purchase is one grant keyed by its
 * payment id (unique), a refund the growth of the payment's refunded total, an opened dispute a
 * hold (a negative adjustment), a won one its release, a lost one its release and a refund. An
 * event that changed the credits writes its payment webhook deliveries in the same unit
 * (PaymentWebhook; one per enabled endpoint of the account subscribing to its type).
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { AccountId } from "../domain/Ids.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import type { PaymentEvent } from "./PaymentEvent.ts"

export interface KeptEvent {
  readonly event: PaymentEvent
  readonly receivedAt: Date
  /** null while the event could not be applied (see `problem`). */
  readonly appliedAt: Date | null
  /** Why the event is not applied yet: an unknown account, a payment or dispute not applied yet. */
  readonly problem: string | null
}

export interface Payment {
  readonly processor: string
  readonly paymentId: string
  readonly accountId: AccountId
  readonly amountMicros: number
  readonly refundedMicros: number
  /** Held for disputes still open. */
  readonly heldMicros: number
  readonly createdAt: Date
}

/** What the ledger holds for one payment, for reconciliation. */
export interface PaymentBooks {
  readonly paymentId: string
  /** Grant entries for the payment: 1 when the books are right. */
  readonly grants: number
  readonly grantedMicros: number
  /** Refund entries for the payment's refunds (disputes lost not included). */
  readonly refundedMicros: number
}

export class PaymentStore extends Context.Service<
  PaymentStore,
  {
    /**
     * Keeps the event unless kept already, and applies it unless applied already, atomically.
     * Returns the kept event: applied, or not with its problem. Never fails for the event's data.
     */
    readonly receive: (event: PaymentEvent) => Effect.Effect<KeptEvent, StoreUnavailable>
    /** Unapplied events naming the payment, oldest first: to retry once it is applied. */
    readonly pending: (processor: string, paymentId: string) => Effect.Effect<ReadonlyArray<KeptEvent>, StoreUnavailable>
    /** Kept events, newest first; only the unapplied ones if asked. limit 1..1000. */
    readonly events: (options: {
      readonly unappliedOnly: boolean
      readonly limit: number
    }) => Effect.Effect<ReadonlyArray<KeptEvent>, StoreUnavailable>
    /** The account's payments, newest first. */
    readonly payments: (accountId: AccountId) => Effect.Effect<ReadonlyArray<Payment>, StoreUnavailable>
    /** The books of each payment id given (an id the ledger lacks has no row). */
    readonly books: (
      processor: string,
      paymentIds: ReadonlyArray<string>
    ) => Effect.Effect<ReadonlyArray<PaymentBooks>, StoreUnavailable>
  }
>()("@taskmeter/kernel/PaymentStore") {}
