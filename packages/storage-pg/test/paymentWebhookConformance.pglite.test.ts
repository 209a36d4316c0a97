import { afterAll, beforeAll } from "@effect/vitest"
import { PaymentWebhookConformance } from "@taskmeter/kernel/testing"
import { closeSharedPglite, openSharedPglite, pgliteEmptied } from "./TestDatabase.ts"

PaymentWebhookConformance.suite("storage-pg on PGlite", () => pgliteEmptied)

beforeAll(openSharedPglite)
afterAll(closeSharedPglite)
