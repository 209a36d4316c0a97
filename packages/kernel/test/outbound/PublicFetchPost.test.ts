import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect, Layer } from "effect"
import { describe, expect, it } from "@effect/vitest"
import * as AddressPolicy from "../../src/outbound/AddressPolicy.ts"
import * as PublicFetch from "../../src/outbound/PublicFetch.ts"

/** A loopback server that answers every request with the client port it came from. */
const portEcho = Effect.acquireRelease(
  Effect.promise(async () => {
    const server = createServer((request, response) => {
      request.resume()
      request.on("end", () => response.end(String(request.socket.remotePort)))
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    return server
  }),
  (server) =>
    Effect.callback<void>((resume) => {
      server.close(() => resume(Effect.void))
      server.closeAllConnections()
    })
).pipe(Effect.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/`))

const clientPort = (url: string, pool?: PublicFetch.Pool) =>
  Effect.map(PublicFetch.post(url, "{}", { pool }), (answer) => answer.text)

const loopback = Layer.succeed(AddressPolicy.AddressPolicy, { ...AddressPolicy.publicOnly, allowLoopbackForTests: true })

describe("PublicFetch.post and pools", () => {
  it.live("reuse a host's vetted connection across requests; without a pool each request connects anew", () =>
    Effect.gen(function* () {
      const url = yield* portEcho
      const pool = yield* PublicFetch.makePool()
      const pooled = new Set<string>()
      for (let i = 0; i < 6; i++) pooled.add(yield* clientPort(url, pool))
      expect(pooled.size).toBeLessThanOrEqual(2)
      const fresh = new Set<string>()
      for (let i = 0; i < 3; i++) fresh.add(yield* clientPort(url))
      expect(fresh.size).toBe(3)
    }).pipe(Effect.scoped, Effect.provide(loopback))
  )

  it.live("answers the status and at most maxAnswerBytes of the body", () =>
    Effect.gen(function* () {
      const url = yield* portEcho
      const answer = yield* PublicFetch.post(url, "{}", { maxAnswerBytes: 2 })
      expect(answer).toEqual({ status: 200, text: expect.stringMatching(/^\d{2}$/) })
    }).pipe(Effect.scoped, Effect.provide(loopback))
  )

  it.live("still refuse what the policy refuses", () =>
    Effect.gen(function* () {
      const pool = yield* PublicFetch.makePool()
      const refused = yield* Effect.flip(PublicFetch.post("https://10.0.0.1/hook", "{}", { pool }))
      expect(refused._tag).toBe("Refused")
    }).pipe(Effect.scoped)
  )
})
