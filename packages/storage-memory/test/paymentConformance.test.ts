import { PaymentStoreConformance } from "@taskmeter/kernel/testing"
import { MemoryStore } from "../src/index.ts"

PaymentStoreConformance.suite("storage-memory", () => MemoryStore.layer)
