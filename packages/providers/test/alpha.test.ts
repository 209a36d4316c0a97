import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { http, HttpResponse } from "msw"
import { Alpha } from "@taskmeter/providers"
import { fakeMarket } from "./support/FakeMarket.ts"
import { serve } from "./support/FakeServer.ts"
import { protocolCases } from "./support/ProtocolCases.ts"
import { outputsOf, run } from "./support/Run.ts"

const BASE = "https://market.example.test"
const IMG = "https://media.example.test/inputs/sample.png"
const fake = fakeMarket(BASE)
const server = serve(fake)

const adapter = Alpha.make({ apiKey: "test-key", baseUrl: BASE })
const recordInfo = (body: object) => http.get(`${BASE}/api/v1/jobs/recordInfo`, () => HttpResponse.json(body))
const record = (data: object) => recordInfo({ code: 200, msg: "success", data: { taskId: "task_9", ...data } })

const cases = [
  {
    model: "alpha-pro-text-to-image-economy",
    input: { prompt: "a fox", aspectRatio: "16:9", resolution: "4k" },
    sent: {
      model: "nano-banana-pro",
      input: { prompt: "a fox", image_input: [], aspect_ratio: "16:9", resolution: "4K", output_format: "png" }
    }
  },
  {
    model: "alpha-pro-edit-economy",
    input: { prompt: "make it night", imageUrls: [IMG, IMG] },
    sent: {
      model: "nano-banana-pro",
      input: { prompt: "make it night", image_input: [IMG, IMG], aspect_ratio: "3:4", resolution: "1K", output_format: "png" }
    }
  },
  {
    model: "alpha-2-lite-image-to-image-economy",
    input: { prompt: "watercolor", imageUrls: [IMG], aspectRatio: "1:8" },
    sent: { model: "nano-banana-2-lite", input: { prompt: "watercolor", image_urls: [IMG], aspect_ratio: "1:8" } }
  },
  {
    model: "alpha-2-lite-text-to-image-economy",
    input: { prompt: "a lighthouse" },
    sent: { model: "nano-banana-2-lite", input: { prompt: "a lighthouse", image_urls: [], aspect_ratio: "9:16" } }
  },
  {
    model: "alpha-2-image-to-image-economy",
    input: { prompt: "cubist", imageUrls: [IMG], resolution: "2k" },
    sent: {
      model: "nano-banana-2",
      input: { prompt: "cubist", image_input: [IMG], aspect_ratio: "9:16", resolution: "2K", output_format: "png" }
    }
  },
  {
    model: "alpha-2-text-to-image-economy",
    input: { prompt: "a harbour", aspectRatio: "4:1" },
    sent: {
      model: "nano-banana-2",
      input: { prompt: "a harbour", image_input: [], aspect_ratio: "4:1", resolution: "1K", output_format: "png" }
    }
  }
] as const

describe("alpha adapter", () => {
  it("serves the six alpha models", () => {
    expect([...adapter.models].sort()).toEqual(cases.map((c) => c.model).sort())
  })

  for (const c of cases) {
    it.live(`${c.model}: sends the market request and returns the image`, () =>
      Effect.gen(function* () {
        const { result } = yield* run(adapter, c.model, c.input)
        const [create, ...polls] = fake.requests
        expect(create!.method).toBe("POST")
        expect(create!.url.pathname).toBe("/api/v1/jobs/createTask")
        expect(create!.headers.get("authorization")).toBe("Bearer test-key")
        expect(create!.headers.get("content-type")).toBe("application/json")
        expect(create!.body).toEqual(c.sent)
        expect(
          polls.every(
            (poll) =>
              poll.url.pathname === "/api/v1/jobs/recordInfo" && poll.url.searchParams.get("taskId") === `task_${fake.jobs.size}`
          )
        ).toBe(true)
        expect(outputsOf(result)).toEqual([
          { type: "image", url: `https://cdn.example.test/results/task_${fake.jobs.size}-0.png`, contentType: "image/png" }
        ])
      })
    )
  }

  it.live("sends the task's reference in the callback URL when one is configured", () =>
    Effect.gen(function* () {
      const withCallback = Alpha.make({
        apiKey: "test-key",
        baseUrl: BASE,
        callBackUrl: "https://taskmeter.example.test/hooks/alpha?v=1"
      })
      yield* withCallback.submit({
        model: "alpha-2-text-to-image-economy",
        input: { prompt: "x", aspectRatio: "1:1", resolution: "1k" },
        reference: "task_abc"
      })
      expect((fake.requests[0]!.body as { callBackUrl: string }).callBackUrl).toBe(
        "https://taskmeter.example.test/hooks/alpha?v=1&reference=task_abc"
      )
    })
  )

  it.live("uses replaced upstream model ids", () =>
    Effect.gen(function* () {
      const renamed = Alpha.make({
        apiKey: "test-key",
        baseUrl: BASE,
        upstreamModels: { "alpha-2-text-to-image-economy": "nano-banana-2-v2" }
      })
      yield* renamed.submit({
        model: "alpha-2-text-to-image-economy",
        input: { prompt: "x", aspectRatio: "1:1", resolution: "1k" },
        reference: "t"
      })
      expect((fake.requests[0]!.body as { model: string }).model).toBe("nano-banana-2-v2")
    })
  )

  it.live("a failed job is Failed with the upstream's message and code", () =>
    Effect.gen(function* () {
      server.use(record({ state: "fail", failCode: "500", failMsg: "image generation failed" }))
      const result = yield* adapter.poll({ model: "alpha-2-text-to-image-economy", upstreamId: "task_9", reference: "t" })
      expect(result).toEqual({
        _tag: "Failed",
        errorCode: "UPSTREAM_GENERATION_FAILED",
        message: "image generation failed (failCode 500)"
      })
    })
  )

  it.live("a finished job whose resultJson is unreadable is Terminal; one without URLs is Failed", () =>
    Effect.gen(function* () {
      server.use(record({ state: "success", resultJson: "{not json" }))
      const error = yield* Effect.flip(
        adapter.poll({ model: "alpha-2-text-to-image-economy", upstreamId: "task_9", reference: "t" })
      )
      expect(error.reason).toBe("Terminal")
      expect(error.errorCode).toBe("UPSTREAM_MALFORMED_RESULT")
      server.resetHandlers()
      server.use(record({ state: "success", resultJson: JSON.stringify({ resultUrls: [] }) }))
      const empty = yield* adapter.poll({ model: "alpha-2-text-to-image-economy", upstreamId: "task_9", reference: "t" })
      expect(empty).toMatchObject({ _tag: "Failed", errorCode: "UPSTREAM_NO_OUTPUT" })
    })
  )

  it.live("an envelope code 455 (maintenance) is Retryable, 429 RateLimited", () =>
    Effect.gen(function* () {
      server.use(recordInfo({ code: 455, msg: "service unavailable" }))
      const poll = adapter.poll({ model: "alpha-2-text-to-image-economy", upstreamId: "task_9", reference: "t" })
      expect((yield* Effect.flip(poll)).reason).toBe("Retryable")
      server.resetHandlers()
      server.use(recordInfo({ code: 429, msg: "too many requests" }))
      expect((yield* Effect.flip(poll)).reason).toBe("RateLimited")
    })
  )
})

protocolCases(server, {
  name: "alpha",
  makeAdapter: (options) => Alpha.make({ apiKey: "test-key", baseUrl: BASE, http: options }),
  model: "alpha-2-text-to-image-economy",
  input: { prompt: "a fox", aspectRatio: "1:1", resolution: "1k" },
  submit: { method: "post", url: `${BASE}/api/v1/jobs/createTask` },
  poll: { method: "get", url: `${BASE}/api/v1/jobs/recordInfo` },
  accepted: () => HttpResponse.json({ code: 200, msg: "success", data: { taskId: "job-1" } }),
  running: () => HttpResponse.json({ code: 200, msg: "success", data: { taskId: "job-1", state: "generating" } }),
  errorResponse: (status, message) => HttpResponse.json({ code: status, msg: message })
})
