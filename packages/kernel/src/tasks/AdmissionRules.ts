/**
 * The admission rules in the order they are judged: when several apply, a submission gets the
 * answer of the first. `TaskRunner.submit` judges the rules before `inStore`; the TaskStore
 * judges `inStore` in one atomic unit, and the storage conformance suite holds every store to it.
 */
import type { AdmissionResult } from "./TaskStore.ts"

export const order = [
  // The presented key (KeyCheck.refusal: unknown, revoked, past its rate), then its scope.
  "Key",
  "Scope",
  // Model and input; without a defaulted input there is no fingerprint, so no replay either.
  "Validation",
  // A live Idempotency-Key replays its task or conflicts, whatever follows.
  "Idempotency",
  // Quote, expectedPriceMicros, executor, media ownership, then the model's daily budget.
  "Price",
  "Executor",
  "MediaOwnership",
  "PlatformBudget",
  "KeyUsage",
  "RateLimit",
  "Concurrency",
  "PaymentReview",
  "Credits"
] as const

export type Rule = (typeof order)[number]

/** The rules the store judges, in order: from the Idempotency-Key on, but for those of the price. */
export const inStore = [
  "Idempotency",
  "KeyUsage",
  "RateLimit",
  "Concurrency",
  "PaymentReview",
  "Credits"
] as const satisfies ReadonlyArray<Rule>

export type StoreRule = (typeof inStore)[number]

/** The store rule a store's answer comes from; undefined for an admission. */
export const ruleOf = (result: AdmissionResult): StoreRule | undefined => {
  switch (result._tag) {
    case "Admitted":
      return undefined
    case "Replayed":
    case "IdempotencyConflict":
      return "Idempotency"
    case "KeyUsageExceeded":
      return "KeyUsage"
    case "RateLimited":
      return "RateLimit"
    case "ConcurrencyLimited":
      return "Concurrency"
    case "PaymentReviewRequired":
      return "PaymentReview"
    case "InsufficientCredits":
      return "Credits"
  }
}
