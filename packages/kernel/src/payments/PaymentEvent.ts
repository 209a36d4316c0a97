/**
 * A processor's webhook event decoded into the kernel's terms: a purchase completed or failed,
 * a payment refunded (the cumulative amount refunded so far), a dispute opened, won or lost.
 * Amounts are USD micros. Every event names its processor, its own id and the payment it concerns.
 */
import { Schema } from "effect"

const naming = {
  processor: Schema.String,
  /** The processor's event id: a delivery of the same event again is recognised by it. */
  eventId: Schema.String,
  /** The processor's id of the payment (Stripe: the PaymentIntent). */
  paymentId: Schema.String
}

export const PurchaseCompleted = Schema.TaggedStruct("PurchaseCompleted", {
  ...naming,
  /** As the checkout named it; may be an account that does not exist. */
  accountId: Schema.String,
  amountMicros: Schema.Int
})

/** Failed or expired: nothing to grant; kept for the operator. */
export const PurchaseFailed = Schema.TaggedStruct("PurchaseFailed", {
  ...naming,
  accountId: Schema.String,
  reason: Schema.String
})

export const Refunded = Schema.TaggedStruct("Refunded", {
  ...naming,
  /** Everything refunded on the payment so far, so that any order of refund events adds up. */
  refundedMicros: Schema.Int
})

export const DisputeOpened = Schema.TaggedStruct("DisputeOpened", {
  ...naming,
  disputeId: Schema.String,
  amountMicros: Schema.Int
})

export const DisputeWon = Schema.TaggedStruct("DisputeWon", {
  ...naming,
  disputeId: Schema.String,
  amountMicros: Schema.Int
})

export const DisputeLost = Schema.TaggedStruct("DisputeLost", {
  ...naming,
  disputeId: Schema.String,
  amountMicros: Schema.Int
})

export const PaymentEvent = Schema.Union([PurchaseCompleted, PurchaseFailed, Refunded, DisputeOpened, DisputeWon, DisputeLost])
export type PaymentEvent = typeof PaymentEvent.Type
