import { afterAll, beforeAll } from "@effect/vitest"
import { ChatStoreConformance } from "@taskmeter/kernel/testing"
import { closeSharedPglite, openSharedPglite, pgliteEmptied } from "./TestDatabase.ts"

ChatStoreConformance.suite("storage-pg on PGlite", () => pgliteEmptied)

beforeAll(openSharedPglite)
afterAll(closeSharedPglite)
