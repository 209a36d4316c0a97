import { StoreConformance } from "@taskmeter/kernel/testing"
import { corruptBalance, postgres } from "./TestDatabase.ts"

StoreConformance.suite("storage-pg on PostgreSQL", () => postgres(), { corrupt: corruptBalance })
