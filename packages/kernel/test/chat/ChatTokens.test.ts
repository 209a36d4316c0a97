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
