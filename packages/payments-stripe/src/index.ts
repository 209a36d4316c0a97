/**
 * Stripe as taskmeter's payment processor: `StripeProcessor.layer(options)` provides the kernel's
 * PaymentProcessor; StripeEvents maps Stripe's webhook events to PaymentEvents.
 */
export * as StripeEvents from "./StripeEvents.ts"
export * as StripeProcessor from "./StripeProcessor.ts"
