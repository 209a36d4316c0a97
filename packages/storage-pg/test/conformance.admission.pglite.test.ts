import { suite } from "./ConformanceParts.ts"

suite("admission")
