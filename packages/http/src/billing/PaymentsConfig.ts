/**
 * Payments from the environment: with STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET, the kernel's
 * Payments on Stripe, top-ups of TOPUP_MIN_USD (5) to TOPUP_MAX_USD (500) with TOPUP_PRESETS_USD
 * (10,25,50,100) offered, back to TOPUP_RETURN_URL (the public URL); and two sweeps, each run by
 * one process at a time: unapplied events retried every 5 minutes, and the previous UTC day
 * reconciled with Stripe daily at 00:10 UTC.
 * Without the two secrets, nothing: the billing routes answer 404 and the CLI grant remains.
 */
import { randomUUID } from "node:crypto"
import { Clock, Config, Data, Duration, Effect, Layer, Option } from "effect"
import { Chores, Payments, TopUpBounds } from "@taskmeter/kernel"
import type { PaymentStore, TaskStore } from "@taskmeter/kernel"
import { StripeProcessor } from "@taskmeter/payments-stripe"

const DAY_MS = 24 * 3600 * 1000

const usdToMicros = (usd: number): number => Math.round(usd * 1_000_000)

const usdList = (text: string): ReadonlyArray<number> =>
  text
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "")
    .map((part) => usdToMicros(Number(part)))

export class PaymentsMisconfigured extends Data.TaggedError("PaymentsMisconfigured")<{ readonly message: string }> {}

export const boundsConfig: Config.Config<TopUpBounds.TopUpBounds> = Config.all({
  minMicros: Config.Number("TOPUP_MIN_USD").pipe(Config.withDefault(5), Config.map(usdToMicros)),
  maxMicros: Config.Number("TOPUP_MAX_USD").pipe(Config.withDefault(500), Config.map(usdToMicros)),
  presetsMicros: Config.String("TOPUP_PRESETS_USD").pipe(Config.withDefault("10,25,50,100"), Config.map(usdList))
})

export const config = Config.all({
  secretKey: Config.option(Config.Redacted("STRIPE_SECRET_KEY")),
  webhookSecret: Config.option(Config.Redacted("STRIPE_WEBHOOK_SECRET")),
  returnUrl: Config.option(Config.URL("TOPUP_RETURN_URL").pipe(Config.map((url) => url.href))),
  bounds: boundsConfig
})

/** The previous UTC day, reconciled; each discrepancy logged as a warning. */
const reconcileYesterday = (payments: Payments.Payments["Service"]) =>
  Effect.gen(function* () {
    const today = Math.floor((yield* Clock.currentTimeMillis) / DAY_MS) * DAY_MS
    const found = yield* payments.reconcile({ from: new Date(today - DAY_MS), to: new Date(today) })
    for (const discrepancy of found) yield* Effect.logWarning("Payment reconciliation", discrepancy)
    yield* Effect.logInfo(
      `Payment reconciliation of ${new Date(today - DAY_MS).toISOString().slice(0, 10)}: ${found.length} discrepancies`
    )
  })

/** Chore leases: long enough for a pass, short enough that a crashed holder's turn comes back soon. */
const CHORE_LEASE_MS = 10 * 60 * 1000
const RETRY_INTERVAL_MS = 5 * 60 * 1000

/**
 * The two sweeps, each run by one process at a time across all that share the store (Chores):
 * the unapplied events every 5 minutes, and yesterday's reconciliation once a day from 00:10 UTC
 * (every server wakes then; the first takes it, the others find it taken less than 12 hours ago).
 */
export const sweeps = Layer.effectDiscard(
  Effect.gen(function* () {
    const payments = yield* Effect.serviceOption(Payments.Payments)
    if (Option.isNone(payments)) return
    const holder = randomUUID()
    const logged = <A, E>(what: string, effect: Effect.Effect<A, E>) =>
      Effect.asVoid(Effect.catchCause(effect, (cause) => Effect.logWarning(`${what} failed`, cause)))
    yield* Effect.forkScoped(
      Chores.every(
        RETRY_INTERVAL_MS,
        Chores.asChore(
          { name: "retry-unapplied-payment-events", holder, everyMs: RETRY_INTERVAL_MS, leaseMs: CHORE_LEASE_MS },
          logged("Retrying unapplied payment events", payments.value.retryUnapplied)
        )
      )
    )
    const reconcile = Chores.asChore(
      { name: "reconcile-payments", holder, everyMs: DAY_MS / 2, leaseMs: CHORE_LEASE_MS },
      logged("Payment reconciliation", reconcileYesterday(payments.value))
    )
    // Daily from ten past midnight UTC, when the previous day is complete at the processor.
    const nowMs = yield* Clock.currentTimeMillis
    const firstRun = DAY_MS - (nowMs % DAY_MS) + 10 * 60 * 1000
    yield* Effect.forkScoped(Effect.andThen(Effect.sleep(Duration.millis(firstRun)), Chores.every(DAY_MS, reconcile)))
  })
)

/**
 * Payments on Stripe when both secrets are set (one without the other is a configuration error),
 * with its sweeps; else nothing. `publicUrl`: where Checkout returns unless TOPUP_RETURN_URL says.
 */
export const layer = (
  publicUrl: string
): Layer.Layer<never, Config.ConfigError | PaymentsMisconfigured, PaymentStore.PaymentStore | TaskStore.TaskStore> =>
  Layer.unwrap(
    Effect.gen(function* () {
      const settings = yield* config
      if (Option.isNone(settings.secretKey) && Option.isNone(settings.webhookSecret)) return Layer.empty
      if (Option.isNone(settings.secretKey) || Option.isNone(settings.webhookSecret)) {
        return yield* new PaymentsMisconfigured({ message: "Set both STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET, or neither." })
      }
      const problem = TopUpBounds.invalid(settings.bounds)
      if (problem !== undefined) {
        return yield* new PaymentsMisconfigured({ message: `TOPUP_MIN_USD, TOPUP_MAX_USD, TOPUP_PRESETS_USD: ${problem}` })
      }
      const stripe = StripeProcessor.layer({
        secretKey: settings.secretKey.value,
        webhookSecret: settings.webhookSecret.value,
        returnUrl: Option.getOrElse(settings.returnUrl, () => publicUrl)
      })
      return sweeps.pipe(Layer.provideMerge(Payments.layer(settings.bounds)), Layer.provide(stripe))
    })
  )
