import { describe, expect, it } from "@effect/vitest"
import { ProblemList } from "../../src/index.ts"

describe("ProblemList.join", () => {
  it("joins up to 20 problems as they are", () => {
    const problems = Array.from({ length: 20 }, (_, i) => `p${i}`)
    expect(ProblemList.join(problems)).toBe(problems.join("; "))
    expect(ProblemList.join([])).toBe("")
  })

  it("lists the first 20 and counts the rest", () => {
    const problems = Array.from({ length: 20_000 }, (_, i) => `p${i}`)
    const message = ProblemList.join(problems)
    expect(message).toBe(`${problems.slice(0, 20).join("; ")}; and 19980 more`)
  })

  it("lists a repeated problem once", () => {
    expect(ProblemList.join(["a", "b", "a", "c"], 2)).toBe("a; b; and 1 more")
  })
})

describe("ProblemList.listed", () => {
  it("is the problems join lists: distinct, the first 20", () => {
    const problems = Array.from({ length: 20_000 }, (_, i) => `p${i % 25}`)
    expect(ProblemList.listed(problems)).toEqual(problems.slice(0, 20))
    expect(ProblemList.listed([...problems].reverse())).toHaveLength(20)
    expect(ProblemList.listed(["a", "b", "a", "c"], 2)).toEqual(["a", "b"])
  })
})
