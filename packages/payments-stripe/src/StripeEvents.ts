/**
 * Stripe's webhook events as the kernel's PaymentEvents, keyed by the PaymentIntent id: a
 * session paid (at once or asynchronously) is a purchase, an async failure or an expiry a failed
 * one, `charge.refunded` the charge's cumulative refunded amount, `charge.dispute.*` a dispute
 * (closed `won` or `warning_closed` is won, `lost` lost). Other events are undefined. Cents to micros;
 * a session paid in a currency other than USD is a failed purchase.
 */
import type Stripe from "stripe"
import type { PaymentEvent } from "@taskmeter/kernel"

export const PROCESSOR = "stripe"

const MICROS_PER_CENT = 10_000

export const micros = (cents: number): number => cents * MICROS_PER_CENT

const idOf = (value: string | { readonly id: string } | null): string | null =>
  value === null ? null : typeof value === "string" ? value : value.id

const accountOf = (session: Stripe.Checkout.Session): string => session.client_reference_id ?? session.metadata?.accountId ?? ""

export const toPaymentEvent = (event: Stripe.Event): PaymentEvent.PaymentEvent | undefined => {
  const named = { processor: PROCESSOR, eventId: event.id }
  switch (event.type) {
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded": {
      const session = event.data.object
      const paymentId = idOf(session.payment_intent)
      // A session paid by a delayed method completes unpaid; its async_payment_succeeded grants.
      if (session.payment_status !== "paid" || paymentId === null) return undefined
      // Credits are USD micros: a session paid in another currency (a Payment Link made elsewhere on
      // the same Stripe account) grants nothing and is kept for the operator.
      if (session.currency !== "usd") {
        return {
          _tag: "PurchaseFailed",
          ...named,
          paymentId,
          accountId: accountOf(session),
          reason: `paid in ${(session.currency ?? "an unknown currency").toUpperCase()}, not USD: not granted`
        }
      }
      return {
        _tag: "PurchaseCompleted",
        ...named,
        paymentId,
        accountId: accountOf(session),
        amountMicros: micros(session.amount_total ?? 0)
      }
    }
    case "checkout.session.async_payment_failed":
    case "checkout.session.expired": {
      const session = event.data.object
      return {
        _tag: "PurchaseFailed",
        ...named,
        paymentId: idOf(session.payment_intent) ?? session.id,
        accountId: accountOf(session),
        reason: event.type === "checkout.session.expired" ? "checkout expired" : "payment failed"
      }
    }
    case "charge.refunded": {
      const charge = event.data.object
      return {
        _tag: "Refunded",
        ...named,
        paymentId: idOf(charge.payment_intent) ?? charge.id,
        refundedMicros: micros(charge.amount_refunded)
      }
    }
    case "charge.dispute.created":
    case "charge.dispute.closed": {
      const dispute = event.data.object
      const common = {
        ...named,
        paymentId: idOf(dispute.payment_intent) ?? idOf(dispute.charge) ?? dispute.id,
        disputeId: dispute.id,
        amountMicros: micros(dispute.amount)
      }
      if (event.type === "charge.dispute.created") return { _tag: "DisputeOpened", ...common }
      if (dispute.status === "lost") return { _tag: "DisputeLost", ...common }
      return dispute.status === "won" || dispute.status === "warning_closed" ? { _tag: "DisputeWon", ...common } : undefined
    }
    default:
      return undefined
  }
}
