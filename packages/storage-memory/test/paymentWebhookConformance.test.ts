import { PaymentWebhookConformance } from "@taskmeter/kernel/testing"
import { MemoryStore } from "../src/index.ts"

PaymentWebhookConformance.suite("storage-memory", () => MemoryStore.layer)
