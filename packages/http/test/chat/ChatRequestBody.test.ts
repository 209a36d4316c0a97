import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as ChatRequestBody from "../../src/chat/ChatRequestBody.ts"

const problem = (body: unknown): string | undefined => {
  const decoded = ChatRequestBody.decode(body)
  return Result.isFailure(decoded) ? decoded.failure.message : undefined
}

const valid = { model: "m", messages: [{ role: "user", content: "hi" }] }

describe("ChatRequestBody.decode", () => {
  it("accepts every role and content form, and forwards messages exactly", () => {
    const messages = [
      { role: "system", content: "be brief" },
      { role: "developer", content: [{ type: "text", text: "rules" }] },
      {
        role: "user",
        content: [
          { type: "text", text: "hi" },
          { type: "image_url", image_url: { url: "https://x/y.png" } }
        ],
        name: "ann"
      },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }]
      },
      { role: "tool", tool_call_id: "c1", content: "42" },
      { role: "function", name: "f", content: "42" }
    ]
    const decoded = ChatRequestBody.decode({ model: "m", messages, stream: true, max_tokens: 50, temperature: 0.2 })
    expect(Result.isSuccess(decoded) && decoded.success).toEqual({
      model: "m",
      messages,
      stream: true,
      maxTokens: 50,
      forward: { messages, temperature: 0.2 }
    })
  })

  it("forwards the known options only, and takes the smaller of two caps", () => {
    const tools = [{ type: "function", function: { name: "f" } }]
    const decoded = ChatRequestBody.decode({
      ...valid,
      tools,
      tool_choice: "auto",
      max_tokens: 100,
      max_completion_tokens: 60,
      stream_options: { include_usage: false },
      service_tier: "priority",
      modalities: ["audio"]
    })
    expect(Result.isSuccess(decoded) && decoded.success).toEqual({
      model: "m",
      messages: valid.messages,
      stream: false,
      maxTokens: 60,
      forward: { messages: valid.messages, tools, tool_choice: "auto" }
    })
  })

  it("decodes a body of the common shape as the schema does", () => {
    // A dropped member (service_tier) sends a body through the schema: both decodings must agree.
    const throughSchema = (body: object) => ChatRequestBody.decode({ ...body, service_tier: "auto" })
    const bodies: ReadonlyArray<object> = [
      valid,
      {
        model: "m",
        messages: [
          { role: "system", content: "be brief" },
          { content: "hi", role: "user" }
        ],
        stream: true
      },
      { ...valid, stream: false, max_tokens: 256, max_completion_tokens: 100, temperature: 0.7, top_p: 1 },
      {
        ...valid,
        max_tokens: null,
        messages: [
          { role: "assistant", content: "" },
          { role: "developer", content: "x" }
        ]
      },
      { ...valid, model: "m\u0000" },
      { ...valid, messages: [{ role: "user", content: "a\ud800" }] },
      { ...valid, max_tokens: 0 },
      { ...valid, max_completion_tokens: 2.5 },
      { ...valid, max_tokens: Number.MAX_SAFE_INTEGER + 1 },
      { ...valid, stream: "yes" },
      { ...valid, model: "" },
      { ...valid, messages: [] },
      { ...valid, messages: [{ role: "tool", content: "42" }] },
      { ...valid, messages: [{ role: "robot", content: "x" }] },
      { ...valid, messages: [{ role: "user", content: 5 }] },
      { ...valid, temperature: null }
    ]
    for (const body of bodies) expect(ChatRequestBody.decode(body)).toEqual(throughSchema(body))
  })

  it("refuses a string a store cannot hold in the model, a message or a forwarded member, naming it", () => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ ...valid, model: "m\u0000" }, "model: contains U+0000 (NUL)"],
      [{ model: "m", messages: [{ role: "user", content: "a\u0000b" }] }, "messages[0].content: contains U+0000 (NUL)"],
      [
        {
          model: "m",
          messages: [
            { role: "system", content: "ok" },
            { role: "user", content: [{ type: "text", text: "\ud800" }] }
          ]
        },
        "messages[1].content[0].text: contains an unpaired surrogate"
      ],
      [
        { model: "m", messages: [{ role: "user", content: "hi", name: "\udc00" }] },
        "messages[0].name: contains an unpaired surrogate"
      ],
      [{ ...valid, stop: ["\u0000"] }, "stop[0]: contains U+0000 (NUL)"],
      [{ ...valid, user: "u\ud800" }, "user: contains an unpaired surrogate"],
      [{ ...valid, tools: [{ type: "function", ["na\u0000me"]: 1 }] }, 'tools[0]["na\\u0000me"]: its name contains U+0000']
    ]
    for (const [body, expected] of cases) {
      const decoded = ChatRequestBody.decode(body)
      expect(Result.isFailure(decoded) && decoded.failure.code).toBe("INVALID_REQUEST")
      expect(problem(body)).toContain(expected)
    }
    // Members that are dropped are never stored nor forwarded; emoji are text like any other.
    expect(problem({ ...valid, dropped: "\u0000" })).toBeUndefined()
    expect(problem({ model: "m", messages: [{ role: "user", content: "🦊 \ud83d\ude00" }] })).toBeUndefined()
  })

  it("says what is wrong", () => {
    expect(problem([])).toBe("The body must be a JSON object.")
    expect(problem({ messages: valid.messages })).toBe("model: required (a chat model id).")
    expect(problem({ model: "m", messages: [] })).toBe("messages: required (a non-empty array).")
    expect(problem({ model: "m", messages: [{ role: "robot", content: "x" }] })).toBe(
      "messages[0].role: must be one of system, developer, user, assistant, tool, function"
    )
    expect(problem({ model: "m", messages: [{ role: "user" }] })).toBe(
      "messages[0].content: must be a string or an array of content parts"
    )
    expect(problem({ model: "m", messages: [{ role: "user", content: [{ text: "no type" }] }] })).toBe(
      "messages[0].content[0]: must be an object with a string type"
    )
    expect(problem({ model: "m", messages: [{ role: "tool", content: "42" }] })).toBe(
      "messages[0].tool_call_id: required for a tool message"
    )
    expect(problem({ ...valid, max_tokens: 0 })).toBe("max_tokens: must be a whole number of at least 1.")
    expect(problem({ ...valid, max_completion_tokens: 1.5 })).toBe("max_completion_tokens: must be a whole number of at least 1.")
    expect(problem({ ...valid, n: 2 })).toBe("n: only 1 is supported.")
    expect(problem({ ...valid, stream: "yes" })).toBe("stream: must be a boolean.")
    expect(problem({ ...valid, tools: {} })).toBe("tools: must be an array of tool definitions.")
    expect(problem(valid)).toBeUndefined()
  })

  it("names the member the schema refuses, inside arrays too", () => {
    expect(problem({ model: "m", messages: [...valid.messages, "hi"] })).toBe("messages[1]: must be an object")
    expect(problem({ model: "m", messages: [{ role: "assistant", content: null, tool_calls: [1] }] })).toBe(
      "messages[0].tool_calls[0]: must be an object"
    )
    expect(problem({ model: "m", messages: [{ role: "user", content: "hi", tool_call_id: 5 }] })).toBe(
      "messages[0].tool_call_id: must be a string"
    )
    expect(problem({ ...valid, tools: [1] })).toBe("tools[0]: must be a tool definition (an object).")
  })
})
