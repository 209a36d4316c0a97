import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import fc from "fast-check"
import defaultChatPrices from "../../prices/default-chat-prices.json" with { type: "json" }
import * as ChatPrices from "../../src/chat/ChatPrices.ts"
import { micros } from "../../src/domain/Money.ts"

const tier = (upTo: number | null, prompt: number, completion: number): ChatPrices.ChatPriceTier => ({
  upToPromptTokens: upTo,
  promptMicrosPerMillion: micros(prompt),
  completionMicrosPerMillion: micros(completion)
})

const tiered = [tier(200_000, 1_250_000, 10_000_000), tier(null, 2_500_000, 15_000_000)]

const problemsOf = (raw: unknown): ReadonlyArray<string> => {
  const decoded = ChatPrices.decode(raw)
  return Result.isFailure(decoded) ? decoded.failure.problems : []
}

const entry = (tiers: ReadonlyArray<unknown>) => ({
  models: { m: { enabled: true, provider: "local", contextLength: 1000, tiers } }
})

describe("ChatPrices.decode", () => {
  it("loads the shipped defaults", () => {
    expect(problemsOf(defaultChatPrices)).toEqual([])
  })

  it("reports every problem at once, with where it is", () => {
    expect(problemsOf({ models: { m: { enabled: true, provider: "local", contextLength: 0, price: 1 } } })).toEqual([
      "models.m.price: is not a member of the chat price list format (check its spelling)",
      "models.m.contextLength: Expected a value greater than or equal to 1"
    ])
  })

  it("requires ordered tiers ending with one open tier, and rates that never fall", () => {
    expect(problemsOf(entry([{ upToPromptTokens: 10, promptMicrosPerMillion: 1, completionMicrosPerMillion: 1 }]))).toEqual([
      "models.m.tiers[0].upToPromptTokens: the last tier must be null (open-ended)"
    ])
    expect(
      problemsOf(
        entry([
          { upToPromptTokens: null, promptMicrosPerMillion: 1, completionMicrosPerMillion: 1 },
          { upToPromptTokens: null, promptMicrosPerMillion: 1, completionMicrosPerMillion: 1 }
        ])
      )
    ).toEqual(["models.m.tiers[0].upToPromptTokens: only the last tier may be null"])
    expect(
      problemsOf(
        entry([
          { upToPromptTokens: 100, promptMicrosPerMillion: 1, completionMicrosPerMillion: 1 },
          { upToPromptTokens: 50, promptMicrosPerMillion: 2, completionMicrosPerMillion: 2 },
          { upToPromptTokens: null, promptMicrosPerMillion: 1, completionMicrosPerMillion: 3 }
        ])
      )
    ).toEqual([
      "models.m.tiers[1].upToPromptTokens: must be greater than the previous tier's",
      "models.m.tiers[2]: rates may not be lower than the previous tier's (a larger prompt never costs less)"
    ])
  })

  it("refuses rates that could overflow the safe-integer range", () => {
    expect(
      problemsOf({
        models: {
          m: {
            enabled: true,
            provider: "local",
            contextLength: 10_000_000,
            tiers: [{ upToPromptTokens: null, promptMicrosPerMillion: 2 ** 52, completionMicrosPerMillion: 0 }]
          }
        }
      })
    ).toEqual(["models.m.tiers: a request as long as the context would cost more than the largest safe amount"])
  })
})

describe("ChatPrices.tierFor", () => {
  it("chooses by prompt size, the bound inclusive", () => {
    expect(ChatPrices.tierFor(tiered, 0)).toBe(tiered[0])
    expect(ChatPrices.tierFor(tiered, 200_000)).toBe(tiered[0])
    expect(ChatPrices.tierFor(tiered, 200_001)).toBe(tiered[1])
  })
})

describe("ChatPrices.cost", () => {
  it("applies the tier's rates to all tokens and rounds once, up", () => {
    // 1000 × 1.25 + 500 × 10 = 6250 micros exactly.
    expect(ChatPrices.cost(tiered, { promptTokens: 1000, completionTokens: 500 })).toBe(6250)
    // 1 × 1.25 + 1 × 10 = 11.25 micros: rounded up once to 12 (per-part rounding would give 2 + 10 = 12 or 1 + 10 = 11).
    expect(ChatPrices.cost(tiered, { promptTokens: 1, completionTokens: 1 })).toBe(12)
    // 3 × 0.4 = 1.2 micros -> 2, not 3 × ceil(0.4) = 3.
    expect(ChatPrices.cost([tier(null, 400_000, 0)], { promptTokens: 3, completionTokens: 0 })).toBe(2)
    expect(ChatPrices.cost(tiered, { promptTokens: 0, completionTokens: 0 })).toBe(0)
    // Above 200k prompt tokens the whole request moves to the higher tier.
    expect(ChatPrices.cost(tiered, { promptTokens: 200_001, completionTokens: 1000 })).toBe(
      Math.ceil((200_001 * 2_500_000 + 1000 * 15_000_000) / 1_000_000)
    )
  })

  it("is exact where floats are not", () => {
    const rates = [tier(null, 3, 7)]
    const usage = { promptTokens: 999_999_999_999, completionTokens: 999_999_999_999 }
    const exact = (999_999_999_999n * 3n + 999_999_999_999n * 7n + 999_999n) / 1_000_000n
    expect(ChatPrices.cost(rates, usage)).toBe(Number(exact))
  })

  it("never falls when the prompt grows (what makes a high estimate's reservation enough)", () => {
    fc.assert(
      fc.property(fc.nat({ max: 400_000 }), fc.nat({ max: 400_000 }), fc.nat({ max: 100_000 }), (a, b, completion) => {
        const [small, large] = a <= b ? [a, b] : [b, a]
        return (
          ChatPrices.cost(tiered, { promptTokens: small, completionTokens: completion }) <=
          ChatPrices.cost(tiered, { promptTokens: large, completionTokens: completion })
        )
      })
    )
  })

  it("costUpTo caps at the reservation, however large the counts", () => {
    expect(ChatPrices.costUpTo(tiered, { promptTokens: 1000, completionTokens: 500 }, micros(7000))).toBe(6250)
    expect(ChatPrices.costUpTo(tiered, { promptTokens: 1000, completionTokens: 500 }, micros(6000))).toBe(6000)
    expect(ChatPrices.costUpTo(tiered, { promptTokens: Number.MAX_SAFE_INTEGER, completionTokens: 1 }, micros(5))).toBe(5)
  })

  it("costBeyond is the cost past the reservation, 0 within it, at most the largest safe amount", () => {
    expect(ChatPrices.costBeyond(tiered, { promptTokens: 1000, completionTokens: 500 }, micros(7000))).toBe(0)
    expect(ChatPrices.costBeyond(tiered, { promptTokens: 1000, completionTokens: 500 }, micros(6250))).toBe(0)
    expect(ChatPrices.costBeyond(tiered, { promptTokens: 1000, completionTokens: 500 }, micros(6000))).toBe(250)
    expect(
      ChatPrices.costBeyond(
        tiered,
        { promptTokens: Number.MAX_SAFE_INTEGER, completionTokens: Number.MAX_SAFE_INTEGER },
        micros(5)
      )
    ).toBe(Number.MAX_SAFE_INTEGER)
  })
})
