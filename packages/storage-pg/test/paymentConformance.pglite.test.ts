import { afterAll, beforeAll } from "@effect/vitest"
import { PaymentStoreConformance } from "@taskmeter/kernel/testing"
import { closeSharedPglite, openSharedPglite, pgliteEmptied } from "./TestDatabase.ts"

PaymentStoreConformance.suite("storage-pg on PGlite", () => pgliteEmptied)

beforeAll(openSharedPglite)
afterAll(closeSharedPglite)
