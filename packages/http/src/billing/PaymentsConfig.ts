/**
 * Payments from the environment: with STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET, the kernel's
 * Payments on Stripe, top-ups of TOPUP_MIN_USD (5) to TOPUP_MAX_USD (500) with TOPUP_PRESETS_USD
 * (10,25,50,100) offered, back to TOPUP_RETURN_URL (the public URL); and two sweeps: unapplied
 * events retried every 5 minutes, and the previous UTC day reconciled with Stripe daily at 00:10 UTC.
 * Without the two secrets, nothing: the billing routes answer 404 and the CLI grant remains.
 */
import { Config, Data, Duration, Effect, Layer, Option, Schedule } from "effect"
import { Payments, TopUpBounds } from "@taskmeter/kernel"
import type { PaymentStore } from "@taskmeter/kernel"
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
    const today = Math.floor(Date.now() / DAY_MS) * DAY_MS
    const found = yield* payments.reconcile({ from: new Date(today - DAY_MS), to: new Date(today) })
    for (const discrepancy of found) yield* Effect.logWarning("Payment reconciliation", discrepancy)
    yield* Effect.logInfo(
      `Payment reconciliation of ${new Date(today - DAY_MS).toISOString().slice(0, 10)}: ${found.length} discrepancies`
    )
  })

const sweeps = Layer.effectDiscard(
  Effect.gen(function* () {
    const payments = yield* Effect.serviceOption(Payments.Payments)
    if (Option.isNone(payments)) return
    const logged = <A, E>(what: string, effect: Effect.Effect<A, E>) =>
      Effect.catchCause(effect, (cause) => Effect.logWarning(`${what} failed`, cause))
    yield* Effect.forkScoped(
      Effect.repeat(
        logged("Retrying unapplied payment events", payments.value.retryUnapplied),
        Schedule.spaced(Duration.minutes(5))
      )
    )
    // Daily from ten past midnight UTC, when the previous day is complete at the processor.
    const firstRun = DAY_MS - (Date.now() % DAY_MS) + 10 * 60 * 1000
    yield* Effect.forkScoped(
      Effect.andThen(
        Effect.sleep(Duration.millis(firstRun)),
        Effect.repeat(logged("Payment reconciliation", reconcileYesterday(payments.value)), Schedule.spaced(Duration.days(1)))
      )
    )
  })
)

/**
 * Payments on Stripe when both secrets are set (one without the other is a configuration error),
 * with its sweeps; else nothing. `publicUrl`: where Checkout returns unless TOPUP_RETURN_URL says.
 */
export const layer = (
  publicUrl: string
): Layer.Layer<never, Config.ConfigError | PaymentsMisconfigured, PaymentStore.PaymentStore> =>
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
