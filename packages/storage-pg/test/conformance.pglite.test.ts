import { afterAll, beforeAll } from "@effect/vitest"
import { StoreConformance } from "@taskmeter/kernel/testing"
import { corruptBalance, makeTemplate, pglite, removeTemplate } from "./TestDatabase.ts"

StoreConformance.suite("storage-pg on PGlite", () => pglite, { corrupt: corruptBalance })

beforeAll(makeTemplate)
afterAll(removeTemplate)
