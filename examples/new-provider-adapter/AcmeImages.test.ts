/**
 * How to test an adapter: msw plays the upstream. One test asserts what we send and what we
 * parse (the AI SDK's style); the conformance suite checks the whole contract, error
 * classification included, in one line.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { http, HttpResponse } from "msw"
import { setupServer } from "msw/node"
import { afterAll, afterEach, beforeAll } from "vitest"
import { AdapterConformance } from "@taskmeter/providers/testing"
import * as AcmeImages from "./AcmeImages.ts"

const BASE = "https://acme.example.test"

/** A stateful fake of the upstream: each generation is "running" once, then "done". */
const acmeUpstream = () => {
  const polls = new Map<string, number>()
  const sent: Array<{ readonly headers: Headers; readonly body: unknown }> = []
  const handlers = [
    http.post(`${BASE}/v1/generations`, async ({ request }) => {
      sent.push({ headers: request.headers, body: await request.json() })
      const id = `gen_${polls.size + 1}`
      polls.set(id, 0)
      return HttpResponse.json({ id }, { status: 202 })
    }),
    http.get(`${BASE}/v1/generations/:id`, ({ params }) => {
      const id = String(params["id"])
      const seen = polls.get(id)
      if (seen === undefined) return HttpResponse.json({ error: "unknown" }, { status: 404 })
      polls.set(id, seen + 1)
      return seen === 0
        ? HttpResponse.json({ status: "running" })
        : HttpResponse.json({ status: "done", images: [{ url: `https://cdn.acme.example.test/${id}.png` }] })
    })
  ]
  return { handlers, sent }
}

describe("AcmeImages", () => {
  const upstream = acmeUpstream()
  const server = setupServer(...upstream.handlers)
  beforeAll(() => server.listen({ onUnhandledFrame: "error" }))
  afterEach(() => server.resetHandlers())
  afterAll(() => server.close())
  const adapter = AcmeImages.make({ apiKey: "acme-key", baseUrl: BASE })

  it.live("sends the prompt and aspect ratio, then returns the image", () =>
    Effect.gen(function* () {
      const input = { prompt: "a fox", aspectRatio: "16:9", resolution: "1k" }
      const submitted = yield* adapter.submit({ model: "alpha-2-text-to-image-economy", input, reference: "task_1" })
      expect(submitted).toEqual({ _tag: "Accepted", upstreamId: "gen_1" })
      expect(upstream.sent[0]!.headers.get("authorization")).toBe("Bearer acme-key")
      expect(upstream.sent[0]!.body).toEqual({ prompt: "a fox", aspect: "16:9" })
      const poll = adapter.poll({ model: "alpha-2-text-to-image-economy", upstreamId: "gen_1", reference: "task_1" })
      expect(yield* poll).toEqual({ _tag: "Pending" })
      expect(yield* poll).toEqual({
        _tag: "Succeeded",
        outputs: [{ type: "image", url: "https://cdn.acme.example.test/gen_1.png", contentType: "image/png" }]
      })
    })
  )

  it.live("a 422 from the upstream fails the task with UPSTREAM_REJECTED_INPUT", () =>
    Effect.gen(function* () {
      server.use(http.post(`${BASE}/v1/generations`, () => HttpResponse.json({ error: "prompt too long" }, { status: 422 })))
      const error = yield* Effect.flip(
        adapter.submit({ model: "alpha-2-text-to-image-economy", input: { prompt: "x", aspectRatio: "1:1" }, reference: "t" })
      )
      expect(error).toMatchObject({ reason: "Terminal", errorCode: "UPSTREAM_REJECTED_INPUT" })
    })
  )
})

AdapterConformance.suite("acme", () => AcmeImages.make({ apiKey: "acme-key", baseUrl: BASE }), {
  handlers: acmeUpstream().handlers
})
