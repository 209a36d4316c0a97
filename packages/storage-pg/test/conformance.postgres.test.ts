import { StoreConformance } from "@taskmeter/kernel/testing"
import { corruptBalance, postgresPerFile } from "./TestDatabase.ts"

StoreConformance.suite("storage-pg on PostgreSQL", postgresPerFile(), { corrupt: corruptBalance })
