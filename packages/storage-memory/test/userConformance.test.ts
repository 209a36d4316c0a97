import { UserStoreConformance } from "@taskmeter/kernel/testing"
import { MemoryStore } from "../src/index.ts"

UserStoreConformance.suite("storage-memory", () => MemoryStore.layer)
