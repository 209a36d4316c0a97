import { afterAll } from "@effect/vitest"
import { ChatStoreConformance } from "@taskmeter/kernel/testing"
import { pglite, removeTemplate } from "./TestDatabase.ts"

ChatStoreConformance.suite("storage-pg on PGlite", () => pglite)

afterAll(removeTemplate)
