/**
 * Stripe's events on PostgreSQL, as several servers see them: each "server" is a store layer of
 * its own (its own pool, Payments and Stripe client) on one shared schema. Replays after a
 * restart, and the same events delivered at once to two servers, grant and refund once.
 */
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { AccountStore, Ids, Ledger, Payments } from "@taskmeter/kernel"
import { StripeProcessor } from "@taskmeter/payments-stripe"
import { PgStore } from "@taskmeter/storage-pg"
import * as Dependencies from "../../../test/Dependencies.ts"
import { charge, dispute, options, session, signed } from "./support/FakeStripe.ts"
import type { Signed } from "./support/FakeStripe.ts"

const USD = 1_000_000
const bounds = { minMicros: 5 * USD, maxMicros: 500 * USD, presetsMicros: [] }

const server = (schema: string) =>
  Layer.mergeAll(Payments.layer(bounds), Ledger.layer).pipe(
    Layer.provideMerge(StripeProcessor.layer(options)),
    Layer.provideMerge(PgStore.layer({ url: Dependencies.databaseUrl, schema, maxConnections: 4 }))
  )

type Server = Layer.Layer<Payments.Payments | Ledger.Ledger | AccountStore.AccountStore, unknown>

const on = <A, E>(layer: Server, effect: Effect.Effect<A, E, Payments.Payments | Ledger.Ledger | AccountStore.AccountStore>) =>
  Effect.provide(effect, layer)

const deliver = (event: Signed) => Payments.Payments.use((payments) => payments.receive(event.payload, event.signature))

const audited = Effect.gen(function* () {
  expect(yield* Ledger.Ledger.use((ledger) => ledger.audit)).toEqual([])
})

/** A fresh schema for the case, dropped afterwards. */
const withSchema = <A, E>(body: (schema: string) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(Effect.succeed(`pay_${randomUUID().replaceAll("-", "").slice(0, 20)}`), body, (schema) =>
    SqlClient.SqlClient.use((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(Dependencies.databaseUrl), maxConnections: 1 })),
      Effect.orDie
    )
  )

describe("Stripe webhooks on PostgreSQL", () => {
  it.live("replays after a restart change nothing; a refund kept before the restart applies after it", () =>
    withSchema((schema) =>
      Effect.gen(function* () {
        const accountId = Ids.makeAccountId()
        const completed = signed("checkout.session.completed", session(accountId, "pi_restart", 4000))
        const refunded = signed("charge.refunded", charge("pi_restart", 4000, 1000))
        yield* on(
          server(schema),
          Effect.gen(function* () {
            yield* AccountStore.AccountStore.use((store) =>
              store.createAccount({ id: accountId, name: "buyer", createdAt: new Date() })
            )
            expect((yield* deliver(refunded))?.appliedAt).toBeNull()
          })
        )
        // The first server stopped; a new one gets Stripe's retries.
        const balance = yield* on(
          server(schema),
          Effect.gen(function* () {
            yield* deliver(completed)
            yield* deliver(completed)
            yield* deliver(refunded)
            yield* audited
            return yield* Ledger.Ledger.use((ledger) => ledger.balances(accountId))
          })
        )
        expect(balance.balanceMicros).toBe(30 * USD)
        const replayed = yield* on(
          server(schema),
          Effect.gen(function* () {
            yield* deliver(completed)
            yield* deliver(refunded)
            expect(yield* Payments.Payments.use((payments) => payments.events({ unappliedOnly: true, limit: 10 }))).toEqual([])
            return yield* Ledger.Ledger.use((ledger) => ledger.balances(accountId))
          })
        )
        expect(replayed.balanceMicros).toBe(30 * USD)
      })
    )
  )

  it.live(
    "the same events delivered at once to two servers grant, refund and hold once",
    () =>
      withSchema((schema) =>
        Effect.gen(function* () {
          // Migrate once before the two servers start together.
          const accountId = yield* on(
            server(schema),
            AccountStore.AccountStore.use((store) =>
              Effect.map(store.createAccount({ id: Ids.makeAccountId(), name: "buyer", createdAt: new Date() }), (a) => a.id)
            )
          )
          const events = [
            signed("checkout.session.completed", session(accountId, "pi_twice", 10_000)),
            signed("checkout.session.async_payment_succeeded", session(accountId, "pi_twice", 10_000)),
            signed("charge.refunded", charge("pi_twice", 10_000, 2_000)),
            signed("charge.refunded", charge("pi_twice", 10_000, 3_000)),
            signed("charge.dispute.created", dispute("pi_twice", "dp_t", 1_000, "needs_response"))
          ]
          const deliverAll = Effect.forEach(events, deliver, { concurrency: "unbounded" })
          const [a, b] = [server(schema), server(schema)]
          yield* Effect.all([on(a, deliverAll), on(b, deliverAll)], { concurrency: "unbounded" })
          // A refund kept by one server while the other was applying the purchase waits for the sweep.
          yield* on(
            b,
            Payments.Payments.use((payments) => payments.retryUnapplied)
          )
          yield* Effect.all([on(a, deliverAll), on(b, deliverAll)], { concurrency: "unbounded" })
          const usage = yield* on(
            a,
            Effect.gen(function* () {
              yield* audited
              return yield* Ledger.Ledger.use((ledger) => ledger.usage(accountId, { limit: 100 }))
            })
          )
          expect(usage.entries.map((entry) => [entry.kind, entry.amountMicros]).reverse()).toEqual(
            expect.arrayContaining([
              ["grant", 100 * USD],
              ["adjustment", -10 * USD]
            ])
          )
          expect(usage.entries.length).toBe(usage.entries.filter((entry) => entry.kind === "refund").length + 2)
          expect(usage.balances.balanceMicros).toBe(100 * USD - 30 * USD - 10 * USD)
        })
      ),
    60_000
  )
})
