import { suite } from "./ConformanceParts.ts"

suite("stores")
