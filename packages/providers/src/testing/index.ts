/**
 * Test support for adapter authors: `AdapterConformance.suite` runs the contract every provider
 * adapter passes. Import it from `@taskmeter/providers/testing` in a test file; it depends on
 * vitest, @effect/vitest and msw.
 */
export * as AdapterConformance from "./AdapterConformance.ts"
export * as SampleInputs from "./SampleInputs.ts"
