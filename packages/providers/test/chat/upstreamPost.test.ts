/**
 * The chat adapter's node:http transport against a real local server (no msw here), so that the
 * server sees the connections: replies read whole reuse one pooled connection (a streamed one from the
 * next turn of the event loop), and a stream given up
 * mid-way closes its own; one not answered in time is given up.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { afterAll, beforeAll } from "vitest"
import type { ChatProvider } from "@taskmeter/kernel"
import { OpenAiCompatible } from "../../src/index.ts"

let connections = 0
let closedRequests = 0
const server = createServer((request, response) => {
  let raw = ""
  request.on("data", (chunk) => (raw += chunk))
  request.on("end", () => {
    const body = JSON.parse(raw) as { stream?: boolean; messages: Array<{ content: string }> }
    // "silent" never answers: only the client can end the request.
    if (body.messages[0]!.content === "silent") return
    if (body.stream !== true) {
      response.setHeader("content-type", "application/json")
      response.end(JSON.stringify({ choices: [{ message: { role: "assistant", content: "Oslo." }, finish_reason: "stop" }] }))
      return
    }
    response.writeHead(200, { "content-type": "text/event-stream" })
    const event = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
    response.write(event({ content: "Os" }))
    // "hang" leaves the stream open: only the client can end it.
    if (body.messages[0]!.content === "hang") return
    response.end(`${event({ content: "lo." }, "stop")}data: [DONE]\n\n`)
  })
  response.on("close", () => {
    if (!response.writableFinished) closedRequests++
  })
})
server.on("connection", () => connections++)

let provider: ChatProvider.ChatProviderV1
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  provider = OpenAiCompatible.make({
    provider: "local",
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
  })
})
afterAll(() => {
  server.closeAllConnections()
  return new Promise<void>((resolve) => server.close(() => resolve()))
})

const call = (content: string): ChatProvider.ChatCall => ({
  model: "m",
  body: { messages: [{ role: "user", content }] },
  maxTokens: 8
})

describe("OpenAiCompatible over node:http", () => {
  it.live("replies read whole, streamed or not, reuse one pooled connection; a stream given up mid-way closes its own", () =>
    Effect.gen(function* () {
      for (let i = 0; i < 3; i++)
        expect((yield* provider.complete(call("hi"))).message).toEqual({ role: "assistant", content: "Oslo." })
      const parts = yield* Effect.scoped(Effect.flatMap(provider.stream(call("hi")), Stream.runCollect))
      expect(parts).toHaveLength(2)
      // A streamed reply's socket is back in the pool once its end is processed, later in the same turn
      // (the stream's end does not wait for it): as for any next request a server receives, a turn passes.
      yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      expect((yield* provider.complete(call("hi"))).finishReason).toBe("stop")
      expect(connections).toBe(1)

      const first = yield* Effect.scoped(Effect.flatMap(provider.stream(call("hang")), (stream) => Stream.runHead(stream)))
      expect(first._tag === "Some" && first.value).toEqual({ _tag: "Delta", delta: { content: "Os" }, finishReason: null })
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
      expect(closedRequests).toBe(1)
      expect((yield* provider.complete(call("hi"))).finishReason).toBe("stop")
      expect(connections).toBe(2)
    })
  )

  it.live("a request not answered within the first-byte timeout fails as Timeout and is given up", () =>
    Effect.gen(function* () {
      const closedBefore = closedRequests
      const impatient = OpenAiCompatible.make({
        provider: "local",
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        firstByteTimeoutMs: 150,
        requestTimeoutMs: 150
      })
      const started = Date.now()
      const streamed = yield* Effect.flip(Effect.scoped(impatient.stream(call("silent"))))
      const completed = yield* Effect.flip(impatient.complete(call("silent")))
      expect([streamed.reason, completed.reason]).toEqual(["Timeout", "Timeout"])
      expect(streamed.message).toBe("the upstream did not answer within 150 ms")
      expect(Date.now() - started).toBeLessThan(2_000)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
      expect(closedRequests - closedBefore).toBe(2)
    })
  )
})
