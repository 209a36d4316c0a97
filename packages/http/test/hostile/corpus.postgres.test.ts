/**
 * The hostile-input corpus (CorpusSuite.ts) against the composed server on storage-pg, on the
 * PostgreSQL at TEST_DATABASE_URL (a schema of its own, dropped afterwards): what a hostile
 * string does once it reaches the database (jsonb and text refuse U+0000, for one). Skipped,
 * with the reason printed, when no PostgreSQL answers.
 */
import { describe, it } from "vitest"
import { postgresReachable } from "../support/stores.ts"
import * as CorpusSuite from "./CorpusSuite.ts"

if (postgresReachable) {
  CorpusSuite.define("hostile-input corpus, storage-pg (PostgreSQL)", await CorpusSuite.prepare("postgres"))
} else {
  describe.skip("hostile-input corpus, storage-pg (PostgreSQL)", () => {
    it("needs PostgreSQL at TEST_DATABASE_URL", () => {})
  })
}
