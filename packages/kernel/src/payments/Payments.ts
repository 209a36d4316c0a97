/**
 * The Payments service: top-ups through the PaymentProcessor and its events into the ledger,
 * through the PaymentStore. `receive` verifies, keeps and applies a webhook event, then retries
 * the events of the same payment that were waiting for it (a refund before its purchase);
 * `retryUnapplied`, run periodically, catches those kept meanwhile by another process.
 * `reconcile` compares the processor's payments of a period with the ledger.
 */
import { Context, Effect, Layer } from "effect"
import * as Errors from "../domain/Errors.ts"
import type { AccountId } from "../domain/Ids.ts"
import type { Micros } from "../domain/Money.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import type { Checkout, PaymentProcessorError, Period } from "./PaymentProcessor.ts"
import { PaymentProcessor } from "./PaymentProcessor.ts"
import type { KeptEvent, Payment } from "./PaymentStore.ts"
import { PaymentStore } from "./PaymentStore.ts"
import * as Reconciliation from "./Reconciliation.ts"
import * as TopUpBounds from "./TopUpBounds.ts"

export class Payments extends Context.Service<
  Payments,
  {
    readonly bounds: TopUpBounds.TopUpBounds
    /** A checkout for a top-up within the bounds; InvalidRequest says what to fix otherwise. */
    readonly checkout: (
      accountId: AccountId,
      amountMicros: number
    ) => Effect.Effect<Checkout, Errors.InvalidRequest | PaymentProcessorError>
    /** undefined for an event type of no use, acknowledged without keeping it. */
    readonly receive: (
      payload: string,
      signature: string
    ) => Effect.Effect<KeptEvent | undefined, PaymentProcessorError | StoreUnavailable>
    /**
     * Applies again every kept event that is not applied yet, oldest first (an event that lost
     * the race with its purchase in another process, an account created since); how many applied.
     */
    readonly retryUnapplied: Effect.Effect<number, StoreUnavailable>
    readonly events: (options: {
      readonly unappliedOnly: boolean
      readonly limit: number
    }) => Effect.Effect<ReadonlyArray<KeptEvent>, StoreUnavailable>
    readonly payments: (accountId: AccountId) => Effect.Effect<ReadonlyArray<Payment>, StoreUnavailable>
    readonly reconcile: (
      period: Period
    ) => Effect.Effect<ReadonlyArray<Reconciliation.Discrepancy>, PaymentProcessorError | StoreUnavailable>
  }
>()("@taskmeter/kernel/Payments") {}

/** The most unapplied events one `retryUnapplied` pass tries. */
export const RETRY_BATCH = 1000

export const make = (
  bounds: TopUpBounds.TopUpBounds
): Effect.Effect<Payments["Service"], never, PaymentProcessor | PaymentStore> =>
  Effect.gen(function* () {
    const processor = yield* PaymentProcessor
    const store = yield* PaymentStore

    // Applying an event may unblock others of its payment (a refund, a dispute closed); each
    // pass applies at least one more or stops.
    const retryPending = (paymentId: string) =>
      Effect.gen(function* () {
        for (;;) {
          const pending = yield* store.pending(processor.name, paymentId)
          let applied = 0
          for (const kept of pending) {
            const again = yield* store.receive(kept.event)
            if (again.appliedAt !== null) applied++
          }
          if (applied === 0) return
        }
      })

    return Payments.of({
      bounds,
      checkout: (accountId, amountMicros) => {
        const problem = TopUpBounds.check(bounds, amountMicros)
        return problem === undefined
          ? processor.checkout({ accountId, amountMicros: amountMicros as Micros })
          : Effect.fail(new Errors.InvalidRequest({ message: problem }))
      },
      receive: (payload, signature) =>
        Effect.gen(function* () {
          const event = yield* processor.decode(payload, signature)
          if (event === undefined) return undefined
          const kept = yield* store.receive(event)
          if (kept.appliedAt !== null) yield* retryPending(event.paymentId)
          return kept
        }),
      retryUnapplied: Effect.gen(function* () {
        const pending = yield* store.events({ unappliedOnly: true, limit: RETRY_BATCH })
        let applied = 0
        for (const kept of pending.toReversed()) {
          if ((yield* store.receive(kept.event)).appliedAt !== null) applied++
        }
        return applied
      }),
      events: store.events,
      payments: store.payments,
      reconcile: (period) =>
        Effect.gen(function* () {
          const listed = yield* processor.payments(period)
          const books = yield* store.books(
            processor.name,
            listed.map((payment) => payment.paymentId)
          )
          return Reconciliation.compare(listed, books)
        })
    })
  })

export const layer = (bounds: TopUpBounds.TopUpBounds): Layer.Layer<Payments, never, PaymentProcessor | PaymentStore> =>
  Layer.effect(Payments, make(bounds))
