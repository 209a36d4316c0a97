/**
 * The payment sweeps of several servers sharing one store run once between them: unapplied events
 * retried every 5 minutes, yesterday reconciled once a day from 00:10 UTC (TestClock; the
 * Payments service records its calls, the store's chores are the real ones).
 */
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "@effect/vitest"
import { type PaymentProcessor, Payments } from "@taskmeter/kernel"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as PaymentsConfig from "../src/billing/PaymentsConfig.ts"

describe("payment sweeps on several servers", () => {
  it.effect("one retry pass per 5 minutes and one reconciliation a day between three servers", () =>
    Effect.gen(function* () {
      let retries = 0
      const reconciled: Array<string> = []
      const payments = Layer.succeed(Payments.Payments)({
        retryUnapplied: Effect.sync(() => {
          retries += 1
          return 0
        }),
        reconcile: (period: PaymentProcessor.Period) =>
          Effect.sync(() => {
            reconciled.push(period.from.toISOString().slice(0, 10))
            return []
          })
      } as unknown as Payments.Payments["Service"])
      const store = yield* Layer.build(MemoryStore.layer)
      for (let server = 0; server < 3; server++) {
        yield* Layer.build(PaymentsConfig.sweeps.pipe(Layer.provide(payments))).pipe(Effect.provide(store))
      }
      yield* TestClock.adjust("1 second")
      expect(retries).toBe(1)
      yield* TestClock.adjust("5 minutes")
      expect(retries).toBe(2)
      // The TestClock starts at 1970-01-01T00:00Z: the first reconciliation is at 00:10 the next day.
      yield* TestClock.adjust("1 day")
      expect(reconciled).toEqual([])
      yield* TestClock.adjust("5 minutes")
      expect(reconciled).toEqual(["1970-01-01"])
      yield* TestClock.adjust("1 day")
      expect(reconciled).toEqual(["1970-01-01", "1970-01-02"])
      // Now 2 days, 10 minutes and a second in: a pass at 0 and at every 5 minutes since.
      expect(retries).toBe(1 + (2 * 24 * 60 + 10) / 5)
    }).pipe(Effect.scoped)
  )
})
