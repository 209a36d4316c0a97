import { afterAll, beforeAll } from "@effect/vitest"
import { WebhookStoreConformance } from "@taskmeter/kernel/testing"
import { closeSharedPglite, openSharedPglite, pgliteEmptied } from "./TestDatabase.ts"

WebhookStoreConformance.suite("storage-pg on PGlite", () => pgliteEmptied)

beforeAll(openSharedPglite)
afterAll(closeSharedPglite)
