/**
 * Payment events as a processor would report them, for the PaymentStore and payment-webhook
 * conformance suites: processor `testpay`, each event with an id unique in the process.
 */
import type { PaymentEvent } from "../payments/PaymentEvent.ts"
import { PaymentStore } from "../payments/PaymentStore.ts"

export const processor = "testpay"

let counter = 0
export const eventId = () => `evt_${++counter}`

export const purchase = (accountId: string, paymentId: string, amountMicros: number, id = eventId()): PaymentEvent => ({
  _tag: "PurchaseCompleted",
  processor,
  eventId: id,
  paymentId,
  accountId,
  amountMicros
})

export const refunded = (paymentId: string, refundedMicros: number): PaymentEvent => ({
  _tag: "Refunded",
  processor,
  eventId: eventId(),
  paymentId,
  refundedMicros
})

export const dispute = (
  tag: "DisputeOpened" | "DisputeWon" | "DisputeLost",
  paymentId: string,
  disputeId: string,
  amountMicros: number
): PaymentEvent => ({ _tag: tag, processor, eventId: eventId(), paymentId, disputeId, amountMicros })

export const receive = (event: PaymentEvent) => PaymentStore.use((store) => store.receive(event))
