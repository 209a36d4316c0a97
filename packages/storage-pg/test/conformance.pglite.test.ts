import { afterAll } from "@effect/vitest"
import { StoreConformance } from "@taskmeter/kernel/testing"
import { corruptBalance, pglite, removeTemplate } from "./TestDatabase.ts"

StoreConformance.suite("storage-pg on PGlite", () => pglite, { corrupt: corruptBalance })

afterAll(removeTemplate)
