import { describe, expect, it } from "@effect/vitest"
import { countTokens } from "gpt-tokenizer/encoding/o200k_base"
import * as ChatTokens from "../../src/chat/ChatTokens.ts"

describe("ChatTokens", () => {
  it("counts text with the model family's encoding, special-token look-alikes as plain text", () => {
    expect(ChatTokens.countText("o200k_base", "hello world")).toBe(countTokens("hello world"))
    expect(ChatTokens.countText("o200k_base", "<|endoftext|>")).toBeGreaterThan(1)
    expect(ChatTokens.countText("o200k_base", "")).toBe(0)
    // The two encodings disagree on some text: the model's own is used.
    const text = "Ｔｏｋｅｎｉｚｅｒｓ differ on full-width text: ｈｅｌｌｏ"
    expect(ChatTokens.countText("cl100k_base", text)).not.toBe(ChatTokens.countText("o200k_base", text))
  })

  it("estimates the families without a tokenizer from characters: CHARS_PER_TOKEN per ASCII character, one per other unit", () => {
    expect(ChatTokens.countText("anthropic", "a".repeat(10))).toBe(4)
    expect(ChatTokens.countText("llama", "a".repeat(10))).toBe(4)
    expect(ChatTokens.countText("mistral", "abcde")).toBe(2)
    expect(ChatTokens.countText("gemini", "abcdef")).toBe(2)
    // Each character outside ASCII (a UTF-16 unit: an emoji is two) counts a token of its own.
    expect(ChatTokens.countText("anthropic", "日本語")).toBe(3)
    expect(ChatTokens.countText("gemini", "café 😀")).toBe(Math.ceil(4 / 3) + 1 + 2)
    expect(ChatTokens.countText("llama", "")).toBe(0)
    // On English prose the estimate is above OpenAI's exact count, as it is meant to err high.
    const prose = "Summarize the plot of a short story about a lighthouse keeper who finds a message in a bottle."
    for (const family of ["anthropic", "llama", "mistral", "gemini"] as const) {
      expect(ChatTokens.countText(family, prose)).toBeGreaterThan(ChatTokens.countText("o200k_base", prose))
    }
  })

  it("maps model ids to their family, a vendor prefix allowed; unknown ids count as o200k_base", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["gpt-4o-mini", "o200k_base"],
      ["openai/gpt-4.1", "o200k_base"],
      ["gpt-5", "o200k_base"],
      ["o3-mini", "o200k_base"],
      ["gpt-4-turbo", "cl100k_base"],
      ["gpt-3.5-turbo", "cl100k_base"],
      ["claude-sonnet-4-5", "anthropic"],
      ["us.anthropic.claude-3-5-haiku-20241022-v1:0", "anthropic"],
      ["meta-llama/Llama-3.1-8B-Instruct", "llama"],
      ["mistral-large-latest", "mistral"],
      ["codestral-2501", "mistral"],
      ["gemini-2.5-flash", "gemini"],
      ["chat-pro", "o200k_base"]
    ]
    expect(cases.map(([model]) => [model, ChatTokens.tokenizerFor(model)])).toEqual(cases)
  })

  it("estimates a prompt as its texts plus framing, high", () => {
    const hello = ChatTokens.countText("o200k_base", "hello world")
    const user = ChatTokens.countText("o200k_base", "user")
    expect(ChatTokens.estimatePrompt("o200k_base", [{ role: "user", content: "hello world" }])).toBe(
      ChatTokens.MESSAGE_OVERHEAD + user + hello + ChatTokens.REPLY_PRIMING
    )
    const withParts = ChatTokens.estimatePrompt("o200k_base", [
      {
        role: "user",
        content: [
          { type: "text", text: "hello world" },
          { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }
        ]
      }
    ])
    expect(withParts).toBe(
      ChatTokens.MESSAGE_OVERHEAD +
        user +
        2 * ChatTokens.PART_OVERHEAD +
        hello +
        ChatTokens.IMAGE_TOKENS +
        ChatTokens.REPLY_PRIMING
    )
  })

  it("counts tool calls, tool results and tool definitions", () => {
    const plain = ChatTokens.estimatePrompt("o200k_base", [{ role: "user", content: "weather?" }])
    const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }]
    expect(ChatTokens.estimatePrompt("o200k_base", [{ role: "user", content: "weather?" }], [tools])).toBe(
      plain + ChatTokens.countText("o200k_base", JSON.stringify(tools))
    )
    const call = ChatTokens.estimatePrompt("o200k_base", [
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }]
      }
    ])
    expect(call).toBeGreaterThan(
      ChatTokens.countText("o200k_base", "get_weather") + ChatTokens.countText("o200k_base", '{"city":"Oslo"}')
    )
  })

  it("counts a delivered completion: text and tool calls", () => {
    expect(ChatTokens.countCompletion("o200k_base", { text: "hello world", toolCalls: [] })).toBe(countTokens("hello world"))
    expect(ChatTokens.countCompletion("o200k_base", { text: "", toolCalls: [{ name: "f", arguments: "{}" }] })).toBe(
      ChatTokens.TOOL_CALL_OVERHEAD + countTokens("f") + countTokens("{}")
    )
  })

  it("splits text into token pieces and cuts at a limit", () => {
    const text = "héllo 😀 wörld, 你好世界"
    const whole = ChatTokens.pieces("o200k_base", text)
    expect(whole.pieces.join("")).toBe(text)
    expect(whole.tokens).toBe(countTokens(text))
    expect(whole.truncated).toBe(false)
    const cut = ChatTokens.pieces("o200k_base", text, 3)
    expect(cut.tokens).toBe(3)
    expect(cut.truncated).toBe(true)
    expect(text.startsWith(cut.pieces.join(""))).toBe(true)
  })
})
