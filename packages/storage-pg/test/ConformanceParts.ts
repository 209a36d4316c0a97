/**
 * The conformance suite on PGlite spread over three test files, which vitest's workers run in
 * parallel. Every group is in exactly one part: the type below fails to compile otherwise.
 */
import { afterAll, beforeAll } from "@effect/vitest"
import { StoreConformance } from "@taskmeter/kernel/testing"
import { closeSharedPglite, corruptBalance, openSharedPglite, pgliteEmptied } from "./TestDatabase.ts"

const parts = {
  // The model-based case alone takes a third of the suite's time.
  model: ["model", "auditor", "accounts"],
  admission: ["ledger", "admission", "keyedAdmission", "idempotencyPurge"],
  stores: ["tasks", "media", "orphanResults", "chores", "retention", "blobs", "prices", "budgets"]
} as const satisfies Record<string, ReadonlyArray<StoreConformance.Group>>

type Part = keyof typeof parts
type Covered = (typeof parts)[Part][number]
// A group left out of every part makes this `false`, and the assignment below a type error.
type EveryGroup = [Exclude<StoreConformance.Group, Covered>] extends [never] ? true : false
export const everyGroupCovered: EveryGroup = true

/** Defines `part` of the suite on one PGlite for the file, each case in a fresh schema. */
export const suite = (part: Part): void => {
  StoreConformance.suite(`storage-pg on PGlite (${part})`, () => pgliteEmptied, {
    corrupt: corruptBalance,
    groups: parts[part]
  })
  beforeAll(openSharedPglite)
  afterAll(closeSharedPglite)
}
