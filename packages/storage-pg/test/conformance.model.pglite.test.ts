import { suite } from "./ConformanceParts.ts"

suite("model")
