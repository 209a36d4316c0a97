/**
 * The payment processor interface, version 1, that an adapter for one processor implements
 * (packages/payments-stripe): a hosted checkout for a top-up, webhook events verified and decoded
 * into PaymentEvents, and the processor's own list of payments for reconciliation. Failures are
 * one `PaymentProcessorError`: BadSignature (the caller answers 400) or Unavailable (503).
 */
import type { Effect } from "effect"
import { Context, Data } from "effect"
import type { AccountId } from "../domain/Ids.ts"
import type { Micros } from "../domain/Money.ts"
import type { PaymentEvent } from "./PaymentEvent.ts"

export class PaymentProcessorError extends Data.TaggedError("PaymentProcessorError")<{
  readonly reason: "BadSignature" | "Unavailable"
  readonly message: string
  readonly cause?: unknown
}> {}

export interface CheckoutRequest {
  readonly accountId: AccountId
  readonly amountMicros: Micros
}

export interface Checkout {
  /** The processor's id of the checkout. */
  readonly id: string
  /** Where to send the customer to pay. */
  readonly url: string
}

/** A payment as the processor books it, for reconciliation. */
export interface ProcessorPayment {
  readonly paymentId: string
  /** As the checkout named it; null for a payment not made through our checkout. */
  readonly accountId: string | null
  readonly amountMicros: number
  readonly refundedMicros: number
  readonly createdAt: Date
}

export interface Period {
  readonly from: Date
  /** Exclusive. */
  readonly to: Date
}

export interface PaymentProcessorV1 {
  readonly specificationVersion: "v1"
  /** Names the processor in stored events, entry notes and payment ids (e.g. "stripe"). */
  readonly name: string
  readonly checkout: (request: CheckoutRequest) => Effect.Effect<Checkout, PaymentProcessorError>
  /**
   * Verifies `signature` over the raw `payload` and decodes the event; undefined for an event
   * type the kernel has no use for. BadSignature for a payload the processor did not sign.
   */
  readonly decode: (payload: string, signature: string) => Effect.Effect<PaymentEvent | undefined, PaymentProcessorError>
  /** The succeeded payments created in the period, with what was refunded on each so far. */
  readonly payments: (period: Period) => Effect.Effect<ReadonlyArray<ProcessorPayment>, PaymentProcessorError>
}

/** The processor in use: one per server. */
export class PaymentProcessor extends Context.Service<PaymentProcessor, PaymentProcessorV1>()(
  "@taskmeter/kernel/PaymentProcessor"
) {}
