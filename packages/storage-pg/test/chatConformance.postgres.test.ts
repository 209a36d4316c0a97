import { ChatStoreConformance } from "@taskmeter/kernel/testing"
import { postgres } from "./TestDatabase.ts"

ChatStoreConformance.suite("storage-pg on PostgreSQL", () => postgres())
