import { PaymentStoreConformance } from "@taskmeter/kernel/testing"
import { postgres } from "./TestDatabase.ts"

PaymentStoreConformance.suite("storage-pg on PostgreSQL", () => postgres())
