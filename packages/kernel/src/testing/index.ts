/**
 * Test support for store implementations: `StoreConformance.suite` runs the conformance suite
 * that every implementation of the storage ports must pass; `HeldTask.make` leaves a task in
 * reconciliation_required. Import it from `@taskmeter/kernel/testing` in a test file; it depends
 * on vitest and fast-check.
 */
export * as StoreConformance from "./StoreConformance.ts"
export * as ChatStoreConformance from "./ChatStoreConformance.ts"
export * as PaymentStoreConformance from "./PaymentStoreConformance.ts"
export * as UserStoreConformance from "./UserStoreConformance.ts"
export * as WebhookStoreConformance from "./WebhookStoreConformance.ts"
export * as PaymentWebhookConformance from "./PaymentWebhookConformance.ts"
export * as HeldTask from "./HeldTask.ts"
