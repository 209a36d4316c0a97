import { StoreConformance } from "@taskmeter/kernel/testing"
import { MemoryStore } from "../src/index.ts"

StoreConformance.suite("storage-memory", () => MemoryStore.layerTesting, { corrupt: MemoryStore.corruptBalance })
