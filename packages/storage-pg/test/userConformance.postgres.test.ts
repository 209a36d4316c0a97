import { UserStoreConformance } from "@taskmeter/kernel/testing"
import { postgresPerFile } from "./TestDatabase.ts"

UserStoreConformance.suite("storage-pg on PostgreSQL", postgresPerFile())
