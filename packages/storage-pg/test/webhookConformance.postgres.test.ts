import { WebhookStoreConformance } from "@taskmeter/kernel/testing"
import { postgresPerFile } from "./TestDatabase.ts"

WebhookStoreConformance.suite("storage-pg on PostgreSQL", postgresPerFile())
