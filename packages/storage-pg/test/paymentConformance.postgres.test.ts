import { PaymentStoreConformance } from "@taskmeter/kernel/testing"
import { postgresPerFile } from "./TestDatabase.ts"

PaymentStoreConformance.suite("storage-pg on PostgreSQL", postgresPerFile())
