/**
 * The payment a payment webhook carries. A processor's event raises one only when applying it
 * changed the account's credits (the grant, a refund total grown, a hold made or released), so
 * each is raised exactly once: `payment.succeeded` (credits granted), `payment.refunded` (the
 * refunded total grew), `payment.disputed` (a dispute opened, its amount held) and
 * `payment.dispute_closed` (won: the hold released; lost: released and refunded). The payment is
 * as it stood after the event, with the dispute the event concerns and the ledger entries the
 * event made; every store builds the same `PaymentData`, and `view` is the delivered JSON.
 */
import type { PaymentEventType } from "../webhooks/WebhookEvent.ts"
import type { PaymentEvent } from "./PaymentEvent.ts"

export type PaymentStatus = "succeeded" | "partially_refunded" | "refunded" | "disputed"

export interface DisputeData {
  readonly id: string
  readonly amountMicros: number
  readonly status: "open" | "won" | "lost"
}

export interface PaymentData {
  /** The processor's id of the payment (Stripe: the PaymentIntent). */
  readonly id: string
  readonly processor: string
  readonly amountMicros: number
  readonly refundedMicros: number
  /** Held for disputes still open. */
  readonly heldMicros: number
  readonly createdAt: Date
  /** The dispute the event concerns; null for a purchase or a refund. */
  readonly dispute: DisputeData | null
  /** The ledger entries the event made, in order. */
  readonly ledgerEntryIds: ReadonlyArray<string>
}

/** The webhook event applying `event` raises when it changed the credits. */
export const eventTypeOf = (event: PaymentEvent): PaymentEventType | undefined => {
  switch (event._tag) {
    case "PurchaseCompleted":
      return "payment.succeeded"
    case "Refunded":
      return "payment.refunded"
    case "DisputeOpened":
      return "payment.disputed"
    case "DisputeWon":
    case "DisputeLost":
      return "payment.dispute_closed"
    default:
      return undefined
  }
}

/** disputed while an amount is held; else refunded once the whole amount is, partially before. */
export const statusOf = (payment: Pick<PaymentData, "amountMicros" | "refundedMicros" | "heldMicros">): PaymentStatus =>
  payment.heldMicros > 0
    ? "disputed"
    : payment.refundedMicros >= payment.amountMicros
      ? "refunded"
      : payment.refundedMicros > 0
        ? "partially_refunded"
        : "succeeded"

/** The `data` of a payment webhook. */
export const view = (payment: PaymentData) => ({
  id: payment.id,
  processor: payment.processor,
  status: statusOf(payment),
  currency: "USD" as const,
  amountMicros: payment.amountMicros,
  refundedMicros: payment.refundedMicros,
  heldMicros: payment.heldMicros,
  createdAt: payment.createdAt.toISOString(),
  dispute: payment.dispute,
  ledgerEntryIds: payment.ledgerEntryIds
})
