import { PaymentWebhookConformance } from "@taskmeter/kernel/testing"
import { postgresPerFile } from "./TestDatabase.ts"

PaymentWebhookConformance.suite("storage-pg on PostgreSQL", postgresPerFile())
