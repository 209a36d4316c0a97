import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import fc from "fast-check"
import { ChatTokens } from "@taskmeter/kernel"
import type { ChatProvider } from "@taskmeter/kernel"
import { LocalChatModel } from "../../src/index.ts"

const model = LocalChatModel.make()

const callOf = (body: ChatProvider.JsonObject, maxTokens = 100): ChatProvider.ChatCall => ({
  model: "taskmeter-local",
  body,
  maxTokens
})

const weather = [
  {
    type: "function",
    function: {
      name: "get_weather",
      parameters: {
        type: "object",
        properties: { city: { type: "string" }, days: { type: "integer" }, metric: { type: "boolean" } },
        required: ["city", "days"]
      }
    }
  }
]

const streamed = (call: ChatProvider.ChatCall) => Effect.scoped(Effect.flatMap(model.stream(call), Stream.runCollect))

describe("LocalChatModel", () => {
  it.effect("answers deterministically and reports the tokens it read and wrote", () =>
    Effect.gen(function* () {
      const call = callOf({
        messages: [
          { role: "system", content: "be brief" },
          { role: "user", content: "Hello there" }
        ]
      })
      const first = yield* model.complete(call)
      expect(yield* model.complete(call)).toEqual(first)
      expect(first.message).toEqual({ role: "assistant", content: "You said: Hello there", refusal: null })
      expect(first.finishReason).toBe("stop")
      const count = (text: string) => ChatTokens.countText("o200k_base", text)
      expect(first.usage).toEqual({
        promptTokens: 3 + (3 + count("system") + count("be brief")) + (3 + count("user") + count("Hello there")),
        completionTokens: count("You said: Hello there")
      })
    })
  )

  it.effect("streams one token per chunk, the same answer, and its usage last", () =>
    Effect.gen(function* () {
      const call = callOf({ messages: [{ role: "user", content: "Tell me about fjords" }] })
      const whole = yield* model.complete(call)
      const parts = yield* streamed(call)
      const deltas = parts.flatMap((part) => (part._tag === "Delta" ? [part] : []))
      expect(deltas[0]?.delta).toEqual({ role: "assistant", content: "" })
      expect(deltas.map((part) => part.delta.content ?? "").join("")).toBe(whole.message.content)
      expect(deltas.length - 2).toBe(whole.usage?.completionTokens)
      expect(deltas.at(-1)?.finishReason).toBe("stop")
      expect(parts.at(-1)).toEqual({ _tag: "Usage", usage: whole.usage })
    })
  )

  it.effect("stops at the cap with finish reason length", () =>
    Effect.gen(function* () {
      const reply = yield* model.complete(callOf({ messages: [{ role: "user", content: "one two three four five six" }] }, 4))
      expect(reply.finishReason).toBe("length")
      expect(reply.usage?.completionTokens).toBe(4)
      expect("You said: one two three four five six".startsWith(String(reply.message.content))).toBe(true)
    })
  )

  it.effect("calls a tool when offered one, then reads its result", () =>
    Effect.gen(function* () {
      const ask = { role: "user", content: "Oslo" }
      const reply = yield* model.complete(callOf({ messages: [ask], tools: weather }))
      expect(reply.finishReason).toBe("tool_calls")
      const call = (reply.message.tool_calls as ReadonlyArray<any>)[0]
      expect(call).toMatchObject({ type: "function", function: { name: "get_weather" } })
      expect(JSON.parse(call.function.arguments)).toEqual({ city: "Oslo", days: 0 })
      const streamedCall = yield* streamed(callOf({ messages: [ask], tools: weather }))
      expect(streamedCall.flatMap((part) => (part._tag === "Delta" ? [part.finishReason] : [])).at(-1)).toBe("tool_calls")

      const after = yield* model.complete(
        callOf({
          messages: [ask, reply.message, { role: "tool", tool_call_id: call.id, content: '{"temp":4}' }],
          tools: weather
        })
      )
      expect(after.message.content).toBe('The tool returned: {"temp":4}')
      const none = yield* model.complete(callOf({ messages: [ask], tools: weather, tool_choice: "none" }))
      expect(none.message.content).toBe("You said: Oslo")
    })
  )

  it("never reads more prompt tokens than the kernel's reservation estimate", () =>
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            role: fc.constantFrom("system", "user", "assistant", "developer"),
            content: fc.oneof(
              fc.string(),
              fc.string({ unit: "grapheme" }),
              fc.array(fc.record({ type: fc.constant("text"), text: fc.string() }))
            )
          }),
          { minLength: 1, maxLength: 6 }
        ),
        fc.boolean(),
        (messages, withTools) => {
          const body = withTools ? { messages, tools: weather } : { messages }
          const read = Effect.runSync(model.complete(callOf(body as ChatProvider.JsonObject))).usage!.promptTokens
          return read <= ChatTokens.estimatePrompt("o200k_base", messages, withTools ? [weather] : [])
        }
      )
    ))
})
