/**
 * Test support for OAuthStore implementations: `OAuthStoreConformance.suite` runs the suite every
 * store must pass. Import it from `@taskmeter/mcp/testing` in a test file; it depends on vitest.
 */
export * as OAuthStoreConformance from "./OAuthStoreConformance.ts"
