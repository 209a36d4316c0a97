import { afterAll, beforeAll } from "@effect/vitest"
import { UserStoreConformance } from "@taskmeter/kernel/testing"
import { closeSharedPglite, openSharedPglite, pgliteEmptied } from "./TestDatabase.ts"

UserStoreConformance.suite("storage-pg on PGlite", () => pgliteEmptied)

beforeAll(openSharedPglite)
afterAll(closeSharedPglite)
