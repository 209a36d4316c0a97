/**
 * Comparing the processor's payments with the ledger's books: a payment the ledger lacks, grants
 * twice or for another amount, or whose refunds it lacks or has twice, is one Discrepancy.
 */
import type { ProcessorPayment } from "./PaymentProcessor.ts"
import type { PaymentBooks } from "./PaymentStore.ts"

export type Problem = "missing" | "duplicate" | "amount_mismatch" | "refund_mismatch"

export interface Discrepancy {
  readonly paymentId: string
  readonly accountId: string | null
  readonly problem: Problem
  readonly processorMicros: number
  readonly ledgerMicros: number
}

export const compare = (
  processor: ReadonlyArray<ProcessorPayment>,
  books: ReadonlyArray<PaymentBooks>
): ReadonlyArray<Discrepancy> => {
  const byId = new Map(books.map((book) => [book.paymentId, book]))
  return processor.flatMap((payment): Array<Discrepancy> => {
    const book = byId.get(payment.paymentId)
    const found = (problem: Problem, processorMicros: number, ledgerMicros: number): Discrepancy => ({
      paymentId: payment.paymentId,
      accountId: payment.accountId,
      problem,
      processorMicros,
      ledgerMicros
    })
    if (book === undefined || book.grants === 0) return [found("missing", payment.amountMicros, 0)]
    const problems: Array<Discrepancy> = []
    if (book.grants > 1) problems.push(found("duplicate", payment.amountMicros, book.grantedMicros))
    else if (book.grantedMicros !== payment.amountMicros) {
      problems.push(found("amount_mismatch", payment.amountMicros, book.grantedMicros))
    }
    if (book.refundedMicros !== payment.refundedMicros) {
      problems.push(found("refund_mismatch", payment.refundedMicros, book.refundedMicros))
    }
    return problems
  })
}
