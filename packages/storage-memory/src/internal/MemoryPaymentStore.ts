import { Clock, Effect } from "effect"
import { PaymentStore, PaymentWebhook } from "@taskmeter/kernel"
import type { Ids, PaymentEvent } from "@taskmeter/kernel"
import { credit } from "./MemoryLedgerStore.ts"
import type { Kind } from "./MemoryLedgerStore.ts"
import { enqueuePayment } from "./MemoryWebhookStore.ts"
import type { PaymentEntryReason, PaymentEventRow, State } from "./State.ts"

const kept = (row: PaymentEventRow): PaymentStore.KeptEvent => ({
  event: row.event,
  receivedAt: row.receivedAt,
  appliedAt: row.appliedAt,
  problem: row.problem
})

export const make = (state: State): PaymentStore.PaymentStore["Service"] => {
  /**
   * Applies the event; the problem that stops it, or undefined once applied. An event that made
   * ledger entries raises its payment webhook (PaymentWebhook) in the same step.
   */
  const apply = (event: PaymentEvent.PaymentEvent, at: Date): string | undefined => {
    const entryIds: Array<string> = []
    const problem = applyEntries(event, at, entryIds)
    const type = PaymentWebhook.eventTypeOf(event)
    const payment = state.payments.get(`${event.processor} ${event.paymentId}`)
    if (problem === undefined && entryIds.length > 0 && type !== undefined && payment !== undefined) {
      const dispute = "disputeId" in event ? state.disputes.get(`${event.processor} ${event.disputeId}`) : undefined
      enqueuePayment(
        state,
        payment.payment.accountId,
        type,
        {
          id: event.paymentId,
          processor: event.processor,
          amountMicros: payment.payment.amountMicros,
          refundedMicros: payment.refunded,
          heldMicros: payment.held,
          createdAt: payment.payment.createdAt,
          dispute:
            dispute === undefined || !("disputeId" in event)
              ? null
              : { id: event.disputeId, amountMicros: dispute.amount, status: dispute.status },
          ledgerEntryIds: entryIds
        },
        at
      )
    }
    return problem
  }

  /** Applies the event, pushing the ids of the ledger entries it made onto `entryIds`. */
  const applyEntries = (event: PaymentEvent.PaymentEvent, at: Date, entryIds: Array<string>): string | undefined => {
    const { processor, paymentId } = event
    const paymentKey = `${processor} ${paymentId}`
    const named = `${processor} payment ${paymentId}`
    const write = (
      kind: Kind,
      accountId: Ids.AccountId,
      reason: PaymentEntryReason,
      amount: number,
      ref: string,
      note: string
    ) => {
      const moved = credit(state, kind, { accountId, amountMicros: amount, note, externalRef: `${processor}:${ref}` }, at)
      if (moved !== undefined) {
        state.paymentEntries.push({ processor, paymentId, reason, entry: moved.entry })
        entryIds.push(moved.entry.id)
      }
    }
    if (event._tag === "PurchaseFailed") return undefined
    const amount = event._tag === "Refunded" ? event.refundedMicros : event.amountMicros
    if (!Number.isSafeInteger(amount) || amount < (event._tag === "Refunded" ? 0 : 1)) return `invalid amount ${amount}`
    if (event._tag === "PurchaseCompleted") {
      if (state.payments.has(paymentKey)) return undefined
      const accountId = event.accountId as Ids.AccountId
      if (!state.accounts.has(accountId)) return `no account ${event.accountId}`
      state.payments.set(paymentKey, {
        payment: {
          processor,
          paymentId,
          accountId,
          amountMicros: event.amountMicros,
          refundedMicros: 0,
          heldMicros: 0,
          createdAt: at
        },
        refunded: 0,
        held: 0
      })
      write("grant", accountId, "purchase", event.amountMicros, paymentId, `${named}: top-up`)
      return undefined
    }
    const payment = state.payments.get(paymentKey)
    if (payment === undefined) return `payment ${paymentId} not applied yet`
    const accountId = payment.payment.accountId
    if (event._tag === "Refunded") {
      const more = event.refundedMicros - payment.refunded
      if (more > 0) {
        payment.refunded = event.refundedMicros
        write("refund", accountId, "refund", more, `${paymentId}:refunded:${event.refundedMicros}`, `${named}: refund`)
      }
      return undefined
    }
    const disputeKey = `${processor} ${event.disputeId}`
    const dispute = state.disputes.get(disputeKey)
    const disputeNote = `${named}: dispute ${event.disputeId}`
    if (event._tag === "DisputeOpened") {
      if (dispute !== undefined) return undefined
      state.disputes.set(disputeKey, { paymentId, amount: event.amountMicros, status: "open" })
      payment.held += event.amountMicros
      write("adjustment", accountId, "hold", -event.amountMicros, `${event.disputeId}:hold`, `${disputeNote} opened, amount held`)
      return undefined
    }
    if (dispute === undefined) return `dispute ${event.disputeId} not opened yet`
    if (dispute.status !== "open") return undefined
    const lost = event._tag === "DisputeLost"
    dispute.status = lost ? "lost" : "won"
    payment.held -= dispute.amount
    write(
      "adjustment",
      accountId,
      "release",
      dispute.amount,
      `${event.disputeId}:release`,
      `${disputeNote} ${dispute.status}, hold released`
    )
    if (lost) write("refund", accountId, "dispute_lost", dispute.amount, `${event.disputeId}:lost`, `${disputeNote} lost`)
    return undefined
  }

  return PaymentStore.PaymentStore.of({
    receive: (event) =>
      Effect.flatMap(Clock.currentTimeMillis, (millis) =>
        Effect.sync(() => {
          const at = new Date(millis)
          const key = `${event.processor} ${event.eventId}`
          let row = state.paymentEvents.get(key)
          if (row === undefined) {
            row = { event, receivedAt: at, appliedAt: null, problem: null }
            state.paymentEvents.set(key, row)
          }
          if (row.appliedAt === null) {
            const problem = apply(row.event, at)
            row.problem = problem ?? null
            if (problem === undefined) row.appliedAt = at
          }
          return kept(row)
        })
      ),
    pending: (processor, paymentId) =>
      Effect.sync(() =>
        Array.from(state.paymentEvents.values())
          .filter((row) => row.appliedAt === null && row.event.processor === processor && row.event.paymentId === paymentId)
          .map(kept)
      ),
    events: (options) =>
      Effect.sync(() =>
        Array.from(state.paymentEvents.values())
          .filter((row) => !options.unappliedOnly || row.appliedAt === null)
          .reverse()
          .slice(0, options.limit)
          .map(kept)
      ),
    payments: (accountId) =>
      Effect.sync(() =>
        Array.from(state.payments.values())
          .filter((row) => row.payment.accountId === accountId)
          .reverse()
          .map((row) => ({ ...row.payment, refundedMicros: row.refunded, heldMicros: row.held }))
      ),
    books: (processor, paymentIds) =>
      Effect.sync(() =>
        paymentIds.flatMap((paymentId): Array<PaymentStore.PaymentBooks> => {
          const entries = state.paymentEntries.filter((row) => row.processor === processor && row.paymentId === paymentId)
          if (entries.length === 0) return []
          const sum = (reason: PaymentEntryReason) =>
            entries.filter((row) => row.reason === reason).reduce((total, row) => total + row.entry.amountMicros, 0)
          return [
            {
              paymentId,
              grants: entries.filter((row) => row.reason === "purchase").length,
              grantedMicros: sum("purchase"),
              refundedMicros: sum("refund")
            }
          ]
        })
      )
  })
}
