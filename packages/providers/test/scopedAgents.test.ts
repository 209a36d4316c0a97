/** The connection pools of HttpClient.scoped (undici), OpenAiCompatible.scoped and ChatUpstreams.scoped (node:http) close with their scope. */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Scope } from "effect"
import type { ChatProvider } from "@taskmeter/kernel"
import { ChatUpstreams, HttpClient, OpenAiCompatible } from "../src/index.ts"

const completion = {
  id: "c1",
  object: "chat.completion",
  choices: [{ index: 0, message: { role: "assistant", content: "Oslo" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 }
}
const server = createServer((_request, response) => {
  response.setHeader("content-type", "application/json")
  response.end(JSON.stringify(completion))
})
let base = ""
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

const call: ChatProvider.ChatCall = {
  model: "chat-pro",
  body: { messages: [{ role: "user", content: "Capital?" }] },
  maxTokens: 8
}

/** Builds `acquire` in a scope of its own, runs `use` before and after closing it: [open, closed]. */
const beforeAndAfterClose = <A, E, R, B, E2>(
  acquire: Effect.Effect<A, E, R | Scope.Scope>,
  use: (a: A) => Effect.Effect<B, E2>
) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const built = yield* Scope.provide(acquire, scope)
    const open = yield* Effect.exit(use(built))
    yield* Scope.close(scope, Exit.void)
    const closed = yield* Effect.exit(use(built))
    return [open, closed] as const
  })

describe("Agents released with their scope", () => {
  it.live("HttpClient.scoped", () =>
    Effect.gen(function* () {
      const [open, closed] = yield* beforeAndAfterClose(HttpClient.scoped(), (client) =>
        client.send("poll", { method: "GET", url: `${base}/echo` })
      )
      expect(Exit.isSuccess(open)).toBe(true)
      expect(Exit.isFailure(closed)).toBe(true)
    })
  )

  it.live("OpenAiCompatible.scoped", () =>
    Effect.gen(function* () {
      const [open, closed] = yield* beforeAndAfterClose(
        OpenAiCompatible.scoped({ provider: "upstream", baseUrl: base, apiKey: "sk-test" }),
        (upstream) => upstream.complete(call)
      )
      expect(Exit.isSuccess(open)).toBe(true)
      expect(Exit.isFailure(closed)).toBe(true)
    })
  )

  it.live("ChatUpstreams.scoped: the configured upstream", () =>
    Effect.gen(function* () {
      const configured = ChatUpstreams.scoped.pipe(
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          ConfigProvider.fromUnknown({ CHAT_UPSTREAM_BASE_URL: base, CHAT_LOCAL_ENABLED: "false" })
        )
      )
      const [open, closed] = yield* beforeAndAfterClose(configured, (providers) => providers[0]!.complete(call))
      expect(Exit.isSuccess(open)).toBe(true)
      expect(Exit.isFailure(closed)).toBe(true)
    })
  )
})
