/**
 * A webhook delivery worker process for the multi-process test: WebhookDelivery.run on
 * PostgreSQL, loopback receivers allowed, until it is killed. Configured by environment
 * variables; prints "ready" once its stores are open.
 */
import { Effect, Layer } from "effect"
import { PgStore } from "@taskmeter/storage-pg"
import * as Mailer from "../../src/mail/Mailer.ts"
import * as AddressPolicy from "../../src/outbound/AddressPolicy.ts"
import * as WebhookDelivery from "../../src/webhooks/WebhookDelivery.ts"

const env = (name: string): string => {
  const value = process.env[name]
  if (value === undefined) throw new Error(`DeliveryWorkerProcess: ${name} is not set`)
  return value
}

const services = Layer.mergeAll(
  PgStore.layer({ url: env("DATABASE_URL"), schema: env("SCHEMA"), maxConnections: 4 }),
  Layer.succeed(AddressPolicy.AddressPolicy, { ...AddressPolicy.publicOnly, allowLoopbackForTests: true }),
  Mailer.layerMemory()
)

Effect.runFork(
  Effect.gen(function* () {
    yield* Effect.sync(() => process.stdout.write("ready\n"))
    return yield* WebhookDelivery.run({
      leaseMs: Number(env("LEASE_MS")),
      idleMs: 50,
      disableAfterMs: WebhookDelivery.DEFAULT_DISABLE_AFTER_MS
    })
  }).pipe(
    Effect.provide(services),
    Effect.tapCause((cause) =>
      Effect.sync(() => {
        console.error(cause)
        process.exit(1)
      })
    )
  )
)
