import { Clock, Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { PaymentEvent, PaymentStore } from "@taskmeter/kernel"
import type { Ids } from "@taskmeter/kernel"
import * as Failures from "./Failures.ts"

type Int8 = bigint | number

interface EventRow {
  readonly event: unknown
  readonly received_at: Date
  readonly applied_at: Date | null
  readonly problem: string | null
}

interface PaymentRow {
  readonly processor: string
  readonly payment_id: string
  readonly account_id: string
  readonly amount_micros: Int8
  readonly refunded_micros: Int8
  readonly held_micros: Int8
  readonly created_at: Date
}

interface BooksRow {
  readonly payment_id: string
  readonly grants: Int8
  readonly granted: Int8
  readonly refunded: Int8
}

const decodeEvent = Schema.decodeUnknownSync(PaymentEvent.PaymentEvent)
const encodeEvent = Schema.encodeSync(PaymentEvent.PaymentEvent)

const toKept = (row: EventRow): PaymentStore.KeptEvent => ({
  event: decodeEvent(row.event),
  receivedAt: row.received_at,
  appliedAt: row.applied_at,
  problem: row.problem
})

const eventColumns = "event, received_at, applied_at, problem"

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  return PaymentStore.PaymentStore.of({
    receive: (event) =>
      Failures.run(
        "receive",
        Effect.flatMap(
          Clock.currentTimeMillis,
          (now) =>
            sql<EventRow>`SELECT ${sql.literal(eventColumns)}
              FROM taskmeter_payment_event(${JSON.stringify(encodeEvent(event))}::jsonb, ${new Date(now)})`
        ).pipe(Effect.map((rows) => toKept(rows[0])))
      ),

    pending: (processor, paymentId) =>
      Failures.run(
        "pending",
        sql<EventRow>`SELECT ${sql.literal(eventColumns)} FROM payment_events
          WHERE processor = ${processor} AND payment_id = ${paymentId} AND applied_at IS NULL
          ORDER BY seq`.pipe(Effect.map((rows) => rows.map(toKept)))
      ),

    events: (options) =>
      Failures.run(
        "events",
        (options.unappliedOnly
          ? sql<EventRow>`SELECT ${sql.literal(eventColumns)} FROM payment_events
              WHERE applied_at IS NULL ORDER BY seq DESC LIMIT ${options.limit}`
          : sql<EventRow>`SELECT ${sql.literal(eventColumns)} FROM payment_events
              ORDER BY seq DESC LIMIT ${options.limit}`
        ).pipe(Effect.map((rows) => rows.map(toKept)))
      ),

    payments: (accountId) =>
      Failures.run(
        "payments",
        sql<PaymentRow>`SELECT * FROM payments WHERE account_id = ${accountId} ORDER BY created_at DESC`.pipe(
          Effect.map((rows) =>
            rows.map(
              (row): PaymentStore.Payment => ({
                processor: row.processor,
                paymentId: row.payment_id,
                accountId: row.account_id as Ids.AccountId,
                amountMicros: Number(row.amount_micros),
                refundedMicros: Number(row.refunded_micros),
                heldMicros: Number(row.held_micros),
                createdAt: row.created_at
              })
            )
          )
        )
      ),

    books: (processor, paymentIds) =>
      Failures.run(
        "books",
        sql<BooksRow>`SELECT pe.payment_id,
            count(*) FILTER (WHERE pe.reason = 'purchase') AS grants,
            coalesce(sum(e.amount_micros) FILTER (WHERE pe.reason = 'purchase'), 0) AS granted,
            coalesce(sum(e.amount_micros) FILTER (WHERE pe.reason = 'refund'), 0) AS refunded
          FROM payment_entries pe JOIN ledger_entries e ON e.id = pe.entry_id
          WHERE pe.processor = ${processor} AND pe.payment_id = ANY(${paymentIds}::text[])
          GROUP BY pe.payment_id`.pipe(
          Effect.map((rows) =>
            rows.map(
              (row): PaymentStore.PaymentBooks => ({
                paymentId: row.payment_id,
                grants: Number(row.grants),
                grantedMicros: Number(row.granted),
                refundedMicros: Number(row.refunded)
              })
            )
          )
        )
      )
  })
})
