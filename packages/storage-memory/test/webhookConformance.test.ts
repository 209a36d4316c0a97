import { WebhookStoreConformance } from "@taskmeter/kernel/testing"
import { MemoryStore } from "../src/index.ts"

WebhookStoreConformance.suite("storage-memory", () => MemoryStore.layer)
