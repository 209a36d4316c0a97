/**
 * The shared HTTP layer against a real local server (no msw here), so the undici Agent's own
 * timeouts and socket errors are what the classification sees.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { afterAll, beforeAll } from "vitest"
import { HttpClient } from "@taskmeter/providers"

const server = createServer((request, response) => {
  switch (request.url) {
    case "/slow-headers":
      setTimeout(() => response.end("{}"), 3_000)
      return
    case "/reset":
      request.socket.destroy()
      return
    case "/big":
      response.setHeader("content-length", "100000")
      response.end(Buffer.alloc(100_000))
      return
    default:
      response.setHeader("content-type", "application/json")
      response.end(JSON.stringify({ method: request.method, auth: request.headers.authorization }))
  }
})
let base = ""
let closedPort = 0
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve))
  closedPort = (probe.address() as AddressInfo).port
  await new Promise<void>((resolve) => probe.close(() => resolve()))
})
// The slow replies' sockets would hold close() for their 3 s; the clients gave up on them long ago.
afterAll(
  () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
)

const client = HttpClient.make({ headersTimeoutMs: 300, requestTimeoutMs: 5_000, connectTimeoutMs: 500 })

describe("HttpClient", () => {
  it.live("sends through the pooled agent and reads the reply", () =>
    Effect.gen(function* () {
      const reply = yield* client.send("poll", {
        method: "POST",
        url: `${base}/echo`,
        headers: { authorization: "Bearer k" },
        json: { a: 1 }
      })
      expect(reply.status).toBe(200)
      expect(JSON.parse(reply.text)).toEqual({ method: "POST", auth: "Bearer k" })
    })
  )

  it.live("a headers timeout is OutcomeUnknown on submit and Retryable on poll", () =>
    Effect.gen(function* () {
      const submit = yield* Effect.flip(client.send("submit", { method: "POST", url: `${base}/slow-headers`, json: {} }))
      expect(submit.reason).toBe("OutcomeUnknown")
      expect(submit.message).toContain("UND_ERR_HEADERS_TIMEOUT")
      expect((yield* Effect.flip(client.send("poll", { method: "GET", url: `${base}/slow-headers` }))).reason).toBe("Retryable")
    })
  )

  it.live("a socket closed after sending is OutcomeUnknown on submit", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(client.send("submit", { method: "POST", url: `${base}/reset`, json: {} }))
      expect(error.reason).toBe("OutcomeUnknown")
    })
  )

  it.live("a refused connection never reached the upstream: Retryable even on submit", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        client.send("submit", { method: "POST", url: `http://127.0.0.1:${closedPort}/`, json: {} })
      )
      expect(error.reason).toBe("Retryable")
      expect(error.message).toContain("ECONNREFUSED")
    })
  )

  it.live("the overall deadline bounds a call and is reported as a timeout", () =>
    Effect.gen(function* () {
      const tight = HttpClient.make({ requestTimeoutMs: 100, headersTimeoutMs: 5_000 })
      const error = yield* Effect.flip(tight.send("submit", { method: "GET", url: `${base}/slow-headers` }))
      expect(error.reason).toBe("OutcomeUnknown")
      expect(error.message).toContain("timed out after 100 ms")
    })
  )

  it.live("a JSON body over the cap is malformed", () =>
    Effect.gen(function* () {
      const small = HttpClient.make({ maxJsonBytes: 1_000 })
      expect((yield* Effect.flip(small.send("poll", { method: "GET", url: `${base}/big` }))).reason).toBe("Retryable")
      expect((yield* Effect.flip(small.send("submit", { method: "GET", url: `${base}/big` }))).reason).toBe("OutcomeUnknown")
    })
  )
})
