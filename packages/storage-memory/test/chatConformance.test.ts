import { ChatStoreConformance } from "@taskmeter/kernel/testing"
import { MemoryStore } from "../src/index.ts"

ChatStoreConformance.suite("storage-memory", () => MemoryStore.layer)
