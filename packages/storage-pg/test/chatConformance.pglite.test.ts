import { afterAll, beforeAll } from "@effect/vitest"
import { ChatStoreConformance } from "@taskmeter/kernel/testing"
import { closeSharedPglite, openSharedPglite, pgliteSchema } from "./TestDatabase.ts"

ChatStoreConformance.suite("storage-pg on PGlite", () => pgliteSchema)

beforeAll(openSharedPglite)
afterAll(closeSharedPglite)
