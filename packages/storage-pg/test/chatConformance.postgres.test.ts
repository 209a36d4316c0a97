import { ChatStoreConformance } from "@taskmeter/kernel/testing"
import { postgresPerFile } from "./TestDatabase.ts"

ChatStoreConformance.suite("storage-pg on PostgreSQL", postgresPerFile())
