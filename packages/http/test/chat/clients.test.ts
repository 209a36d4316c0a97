/**
 * The official clients against the running chat endpoint as packages/http/README.md shows them:
 * `openai` (models.list() at /api/v1, no retry of an error a retry cannot fix, x-request-id) and the
 * AI SDK's `@ai-sdk/openai-compatible` (text, stream with usage, and the error body with the
 * documented `errorStructure`), on the offline model.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createOpenAICompatible, OpenAICompatibleChatLanguageModel } from "@ai-sdk/openai-compatible"
import { APICallError, generateText, streamText } from "ai"
import OpenAI, { APIError } from "openai"
import { z } from "zod"
import * as T from "./ChatTestServer.ts"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)
const PROMPT = "What is the capital of Norway?"

/** A fetch that counts the requests a client sends. */
const counting = () => {
  const counter = { requests: 0, fetch: (input: string | URL | Request, init?: RequestInit) => fetch(input, init) }
  counter.fetch = (input, init) => {
    counter.requests++
    return fetch(input, init)
  }
  return counter
}

/**
 * The AI SDK as the README configures it: the provider, or, to read the spec's error body and
 * honour x-should-retry, the chat model with an `errorStructure` (which the provider does not take).
 */
const aiSdk = (base: string, apiKey: string, fetchFn: typeof fetch = fetch) => ({
  provider: createOpenAICompatible({ name: "taskmeter", baseURL: `${base}/api/v1`, apiKey, includeUsage: true, fetch: fetchFn }),
  withErrors: (model: string) =>
    new OpenAICompatibleChatLanguageModel(model, {
      provider: "taskmeter.chat",
      url: ({ path }) => `${base}/api/v1${path}`,
      headers: () => ({ authorization: `Bearer ${apiKey}` }),
      fetch: fetchFn,
      includeUsage: true,
      errorStructure: {
        errorSchema: z.object({ code: z.string(), error: z.string() }),
        errorToMessage: (body) => `${body.code}: ${body.error}`,
        isRetryable: (response) =>
          response.headers.get("x-should-retry") !== "false" && (response.status === 429 || response.status >= 500)
      }
    })
})

layer(T.layer(), { excludeTestServices: true })("chat through the official clients", (it) => {
  describe("openai", () => {
    it.effect("models.list() with baseURL at /api/v1 lists the chat models", () =>
      Effect.gen(function* () {
        const who = yield* T.customer(1_000_000)
        const models = yield* promise(async () => {
          const ids = []
          for await (const model of who.openai.models.list()) ids.push(model.id)
          return ids
        })
        expect(models.sort()).toEqual(["chat-mini", "chat-pro", "taskmeter-local"])
      })
    )

    it.effect("an error a retry cannot fix is sent once, explains itself and carries a request id", () =>
      Effect.gen(function* () {
        const who = yield* T.customer(10)
        const counter = counting()
        const client = new OpenAI({ apiKey: who.secret, baseURL: `${yield* T.baseUrl}/api/v1`, fetch: counter.fetch })
        const error = yield* promise(() =>
          client.chat.completions.create({ model: "taskmeter-local", messages: [{ role: "user", content: PROMPT }] }).then(
            () => undefined,
            (e: unknown) => e as APIError
          )
        )
        expect(error).toBeInstanceOf(APIError)
        expect(counter.requests).toBe(1)
        expect(error?.status).toBe(409)
        expect(error?.headers?.get("x-should-retry")).toBe("false")
        expect(error?.message).toMatch(
          /This request may cost up to \d+ micro-USD .*10 are available\. Lower max_tokens or add credits\./
        )
        expect(error?.requestID).toMatch(/^req_/)
      })
    )

    it.effect("a completion's x-request-id is its chat request id", () =>
      Effect.gen(function* () {
        const who = yield* T.customer(1_000_000)
        const { data, response } = yield* promise(() =>
          who.openai.chat.completions
            .create({ model: "taskmeter-local", messages: [{ role: "user", content: PROMPT }] })
            .withResponse()
        )
        expect(response.headers.get("x-request-id")).toBe(data.id)
        expect(data.system_fingerprint).toBe("fp_taskmeter")
      })
    )
  })

  describe("@ai-sdk/openai-compatible", () => {
    it.effect("generateText and streamText, with usage", () =>
      Effect.gen(function* () {
        const who = yield* T.customer(1_000_000)
        const model = aiSdk(yield* T.baseUrl, who.secret).provider
        const generated = yield* promise(() => generateText({ model: model("taskmeter-local"), prompt: PROMPT }))
        expect(generated.text).toBe(`You said: ${PROMPT}`)
        expect(generated.finishReason).toBe("stop")
        expect(generated.usage.inputTokens).toBeGreaterThan(0)
        const streamed = yield* promise(async () => {
          const result = streamText({ model: model("taskmeter-local"), prompt: PROMPT })
          let text = ""
          for await (const piece of result.textStream) text += piece
          return { text, usage: await result.usage, finishReason: await result.finishReason }
        })
        expect(streamed).toMatchObject({ text: `You said: ${PROMPT}`, finishReason: "stop" })
        expect(streamed.usage.outputTokens).toBe(generated.usage.outputTokens)
      })
    )

    it.effect("an error is read from the spec's body and not retried", () =>
      Effect.gen(function* () {
        const who = yield* T.customer(10)
        const counter = counting()
        const model = aiSdk(yield* T.baseUrl, who.secret, counter.fetch as typeof fetch).withErrors("taskmeter-local")
        const error = yield* promise(() =>
          generateText({ model, prompt: PROMPT }).then(
            () => undefined,
            (e: unknown) => e
          )
        )
        expect(APICallError.isInstance(error)).toBe(true)
        expect((error as APICallError).message).toMatch(/^INSUFFICIENT_CREDITS: This request may cost up to/)
        expect(counter.requests).toBe(1)
      })
    )
  })
})
