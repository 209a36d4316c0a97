import { afterAll, beforeAll } from "@effect/vitest"
import { ChatStoreConformance } from "@taskmeter/kernel/testing"
import { makeTemplate, pglite, removeTemplate } from "./TestDatabase.ts"

ChatStoreConformance.suite("storage-pg on PGlite", () => pglite)

beforeAll(makeTemplate)
afterAll(removeTemplate)
