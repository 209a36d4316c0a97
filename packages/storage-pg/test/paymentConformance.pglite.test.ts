import { afterAll, beforeAll } from "@effect/vitest"
import { PaymentStoreConformance } from "@taskmeter/kernel/testing"
import { closeSharedPglite, openSharedPglite, pgliteSchema } from "./TestDatabase.ts"

PaymentStoreConformance.suite("storage-pg on PGlite", () => pgliteSchema)

beforeAll(openSharedPglite)
afterAll(closeSharedPglite)
