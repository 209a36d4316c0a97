/**
 * Stripe's events become the account's payment webhooks, end to end: Stripe's signed events
 * (checkout completed, refund, dispute opened and lost) received by Payments, each delivered by
 * the delivery worker to the account's endpoint at a local receiver, signed so that the
 * `standardwebhooks` package verifies it, the body the payment after the event with the ledger
 * entries it made; an event delivered again raises nothing more. On memory and on PostgreSQL.
 */
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { http, passthrough } from "msw"
import { Webhook } from "standardwebhooks"
import {
  AccountContacts,
  AccountStore,
  AddressPolicy,
  Ids,
  Ledger,
  Mailer,
  Payments,
  WebhookDelivery,
  WebhookEndpoints
} from "@taskmeter/kernel"
import { StripeProcessor } from "@taskmeter/payments-stripe"
import { MemoryStore } from "@taskmeter/storage-memory"
import { PgStore } from "@taskmeter/storage-pg"
import * as Dependencies from "../../../test/Dependencies.ts"
import { charge, dispute, options, server, session, signed } from "./support/FakeStripe.ts"

const USD = 1_000_000
const bounds = { minMicros: 5 * USD, maxMicros: 500 * USD, presetsMicros: [] }

const services = <A, E>(store: Layer.Layer<A, E>) =>
  Layer.mergeAll(Payments.layer(bounds), Ledger.layer, WebhookEndpoints.layer()).pipe(
    Layer.provideMerge(StripeProcessor.layer(options)),
    Layer.provideMerge(store),
    Layer.provideMerge(Layer.succeed(AddressPolicy.AddressPolicy, { ...AddressPolicy.publicOnly, allowLoopbackForTests: true })),
    Layer.provideMerge(Mailer.layerMemory()),
    Layer.provideMerge(Layer.succeed(AccountContacts.AccountContacts, { emailsOf: () => Effect.succeed([]) }))
  )

/** A receiver on 127.0.0.1 keeping every request, answering 204. */
const receiver = Effect.acquireRelease(
  Effect.callback<{
    readonly url: string
    readonly received: Array<{ headers: Record<string, string>; body: string }>
    close: () => void
  }>((resume) => {
    const received: Array<{ headers: Record<string, string>; body: string }> = []
    const listener = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const headers: Record<string, string> = {}
        for (const [name, value] of Object.entries(request.headers)) if (typeof value === "string") headers[name] = value
        received.push({ headers, body: Buffer.concat(chunks).toString("utf8") })
        response.writeHead(204).end()
      })
    })
    listener.listen(0, "127.0.0.1", () =>
      resume(
        Effect.succeed({
          url: `http://127.0.0.1:${(listener.address() as AddressInfo).port}/hook`,
          received,
          close: () => {
            listener.close()
            listener.closeAllConnections()
          }
        })
      )
    )
  }),
  (opened) => Effect.sync(opened.close)
)

const deliverDue = WebhookDelivery.deliverDue({ disableAfterMs: 24 * 3600 * 1000 })

const scenario = Effect.gen(function* () {
  server.use(http.all(/^http:\/\/127\.0\.0\.1:\d+\//, () => passthrough()))
  const hooks = yield* receiver
  const accountId = Ids.makeAccountId()
  yield* AccountStore.AccountStore.use((store) => store.createAccount({ id: accountId, name: "buyer", createdAt: new Date() }))
  const endpoints = yield* WebhookEndpoints.WebhookEndpoints
  const endpoint = yield* endpoints.create(accountId, {
    url: hooks.url,
    events: ["task.succeeded", "payment.succeeded", "payment.refunded", "payment.disputed", "payment.dispute_closed"]
  })
  const verifier = new Webhook(endpoint.secret)
  const payments = yield* Payments.Payments
  const receive = (event: { readonly payload: string; readonly signature: string }) =>
    payments.receive(event.payload, event.signature)
  const entryIds = Effect.map(
    Ledger.Ledger.use((ledger) => ledger.usage(accountId, { limit: 100 })),
    (usage) => usage.entries.map((entry) => entry.id).reverse()
  )
  /** Delivers what is due and answers the bodies received since, verified. */
  const delivered = Effect.gen(function* () {
    const before = hooks.received.length
    yield* deliverDue
    return hooks.received.slice(before).map((request) => verifier.verify(request.body, request.headers) as Record<string, any>)
  })

  const completed = signed("checkout.session.completed", session(accountId, "pi_hook", 4000))
  yield* receive(completed)
  const [granted, ...noMore] = yield* delivered
  expect(noMore).toEqual([])
  const ledger = yield* entryIds
  expect(granted).toMatchObject({
    type: "payment.succeeded",
    data: {
      id: "pi_hook",
      processor: "stripe",
      status: "succeeded",
      currency: "USD",
      amountMicros: 40 * USD,
      refundedMicros: 0,
      heldMicros: 0,
      dispute: null,
      ledgerEntryIds: [ledger[0]]
    }
  })
  expect(Date.parse(granted!.timestamp)).not.toBeNaN()

  // Stripe delivers the same event again: nothing more.
  yield* receive(completed)
  expect(yield* delivered).toEqual([])

  yield* receive(signed("charge.refunded", charge("pi_hook", 4000, 1000)))
  const [refunded] = yield* delivered
  expect(refunded).toMatchObject({
    type: "payment.refunded",
    data: { status: "partially_refunded", refundedMicros: 10 * USD, ledgerEntryIds: [(yield* entryIds)[1]] }
  })

  yield* receive(signed("charge.dispute.created", dispute("pi_hook", "dp_hook", 2000, "needs_response")))
  const [disputed] = yield* delivered
  expect(disputed).toMatchObject({
    type: "payment.disputed",
    data: { status: "disputed", heldMicros: 20 * USD, dispute: { id: "dp_hook", amountMicros: 20 * USD, status: "open" } }
  })

  yield* receive(signed("charge.dispute.closed", dispute("pi_hook", "dp_hook", 2000, "lost")))
  const [closed] = yield* delivered
  expect(closed).toMatchObject({
    type: "payment.dispute_closed",
    data: { status: "partially_refunded", heldMicros: 0, dispute: { id: "dp_hook", status: "lost" } }
  })
  expect(closed!.data.ledgerEntryIds).toEqual((yield* entryIds).slice(3))

  const log = yield* endpoints.deliveries(accountId, endpoint.id, { limit: 10 })
  expect(log.deliveries.map((d) => [d.type, d.status, d.paymentId, d.taskId])).toEqual([
    ["payment.dispute_closed", "delivered", "pi_hook", null],
    ["payment.disputed", "delivered", "pi_hook", null],
    ["payment.refunded", "delivered", "pi_hook", null],
    ["payment.succeeded", "delivered", "pi_hook", null]
  ])
  expect(new Set(hooks.received.map((request) => request.headers["webhook-id"]))).toEqual(
    new Set(log.deliveries.map((d) => d.id))
  )
  expect(yield* Ledger.Ledger.use((l) => l.audit)).toEqual([])
})

/** A fresh schema for the case, dropped afterwards. */
const onPostgres = Effect.acquireUseRelease(
  Effect.succeed(`payhook_${randomUUID().replaceAll("-", "").slice(0, 20)}`),
  (schema) =>
    Effect.scoped(scenario).pipe(
      Effect.provide(services(PgStore.layer({ url: Dependencies.databaseUrl, schema, maxConnections: 4 })))
    ),
  (schema) =>
    SqlClient.SqlClient.use((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(Dependencies.databaseUrl), maxConnections: 1 })),
      Effect.orDie
    )
)

describe("Stripe events as payment webhooks", () => {
  it.live("memory: each credit change is one signed delivery that standardwebhooks verifies", () =>
    Effect.scoped(scenario).pipe(Effect.provide(services(MemoryStore.layer)))
  )

  it.live("PostgreSQL: each credit change is one signed delivery that standardwebhooks verifies", () => onPostgres)
})
