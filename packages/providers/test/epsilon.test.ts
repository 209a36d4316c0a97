import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { http, HttpResponse } from "msw"
import { Epsilon } from "@taskmeter/providers"
import { fakeFal } from "./support/FakeFal.ts"
import { serve } from "./support/FakeServer.ts"
import { protocolCases } from "./support/ProtocolCases.ts"
import { outputsOf, run } from "./support/Run.ts"

const BASE = "https://queue.fal.example.test"
const A = "https://media.example.test/inputs/a.png"
const B = "https://media.example.test/inputs/b.png"
const fake = fakeFal(BASE)
const server = serve(fake)

const adapter = Epsilon.make({ apiKey: "test-key", baseUrl: BASE })
const common = { prompt: "a lighthouse at dusk", aspect_ratio: "16:9", resolution: "720p", duration: "8s" }

const cases = [
  {
    model: "epsilon-3-1-pro-start-end-to-video-channel-low-price",
    input: { prompt: "a lighthouse at dusk", firstFrameUrl: A, lastFrameUrl: B, aspectRatio: "16:9" },
    endpoint: "fal-ai/veo3.1/first-last-frame-to-video",
    sent: { ...common, first_frame_url: A, last_frame_url: B }
  },
  {
    model: "epsilon-3-1-fast-start-end-to-video-channel-low-price",
    input: { prompt: "a lighthouse at dusk", firstFrameUrl: A, aspectRatio: "16:9" },
    endpoint: "fal-ai/veo3.1/fast/image-to-video",
    sent: { ...common, image_url: A }
  },
  {
    model: "epsilon-3-1-pro-image-to-video-channel-low-price",
    input: { prompt: "a lighthouse at dusk", imageUrl: A, resolution: "1080p" },
    endpoint: "fal-ai/veo3.1/image-to-video",
    sent: { ...common, resolution: "1080p", image_url: A }
  },
  {
    model: "epsilon-3-1-fast-image-to-video-channel-low-price",
    input: { prompt: "a lighthouse at dusk", imageUrls: [A, B, A] },
    endpoint: "fal-ai/veo3.1/reference-to-video",
    sent: { ...common, image_urls: [A, B, A] }
  },
  {
    model: "epsilon-3-1-pro-text-to-video-channel-low-price",
    input: { prompt: "a lighthouse at dusk", aspectRatio: "16:9" },
    endpoint: "fal-ai/veo3.1",
    sent: common
  },
  {
    model: "epsilon-3-1-fast-text-to-video-channel-low-price",
    input: { prompt: "a lighthouse at dusk", aspectRatio: "9:16", resolution: "4k" },
    endpoint: "fal-ai/veo3.1/fast",
    sent: { ...common, aspect_ratio: "9:16", resolution: "4k" }
  }
] as const

describe("epsilon adapter", () => {
  it("serves the six epsilon models", () => {
    expect([...adapter.models].sort()).toEqual(cases.map((c) => c.model).sort())
  })

  for (const c of cases) {
    it.live(`${c.model}: queues on ${c.endpoint}, polls the app's status and fetches the result`, () =>
      Effect.gen(function* () {
        const { result } = yield* run(adapter, c.model, c.input)
        const [submit, ...rest] = fake.requests
        const id = `req-${fake.jobs.size}`
        expect(submit!.method).toBe("POST")
        expect(submit!.url.pathname).toBe(`/${c.endpoint}`)
        expect(submit!.headers.get("authorization")).toBe("Key test-key")
        expect(submit!.body).toEqual(c.sent)
        expect(rest.map((r) => `${r.method} ${r.url.pathname}`)).toEqual([
          `GET /fal-ai/veo3.1/requests/${id}/status`,
          `GET /fal-ai/veo3.1/requests/${id}/status`,
          `GET /fal-ai/veo3.1/requests/${id}`
        ])
        expect(outputsOf(result)).toEqual([
          { type: "video", url: `https://cdn.example.test/results/${id}.mp4`, contentType: "video/mp4" }
        ])
      })
    )
  }

  it.live("a run that completed with an error is Failed; a content policy error says so", () =>
    Effect.gen(function* () {
      const status = (body: object) => http.get(`${BASE}/fal-ai/veo3.1/requests/:id/status`, () => HttpResponse.json(body))
      const poll = adapter.poll({ model: "epsilon-3-1-pro-text-to-video-channel-low-price", upstreamId: "req-x", reference: "t" })
      server.use(status({ status: "COMPLETED", error: "Runner crashed", error_type: "runner_disconnected" }))
      expect(yield* poll).toEqual({ _tag: "Failed", errorCode: "UPSTREAM_GENERATION_FAILED", message: "Runner crashed" })
      server.resetHandlers()
      server.use(status({ status: "COMPLETED", error: "flagged", error_type: "content_policy_violation" }))
      expect(yield* poll).toMatchObject({ _tag: "Failed", errorCode: "UPSTREAM_CONTENT_REJECTED" })
    })
  )

  it.live("a result that returns the model's 422 is Terminal; one without a video is Failed", () =>
    Effect.gen(function* () {
      server.use(http.get(`${BASE}/fal-ai/veo3.1/requests/:id/status`, () => HttpResponse.json({ status: "COMPLETED" })))
      const poll = adapter.poll({ model: "epsilon-3-1-pro-text-to-video-channel-low-price", upstreamId: "req-x", reference: "t" })
      server.use(
        http.get(`${BASE}/fal-ai/veo3.1/requests/:id`, () =>
          HttpResponse.json({ detail: [{ msg: "image too small" }] }, { status: 422 })
        )
      )
      expect(yield* Effect.flip(poll)).toMatchObject({ reason: "Terminal", errorCode: "UPSTREAM_REJECTED_INPUT" })
      server.use(http.get(`${BASE}/fal-ai/veo3.1/requests/:id`, () => HttpResponse.json({ images: [] })))
      expect(yield* poll).toMatchObject({ _tag: "Failed", errorCode: "UPSTREAM_NO_OUTPUT" })
    })
  )

  it.live("cancel asks the queue and accepts a request that already completed", () =>
    Effect.gen(function* () {
      yield* adapter.cancel!({ model: "epsilon-3-1-pro-text-to-video-channel-low-price", upstreamId: "req-7" })
      expect(fake.requests.map((r) => `${r.method} ${r.url.pathname}`)).toEqual(["PUT /fal-ai/veo3.1/requests/req-7/cancel"])
      server.use(
        http.put(`${BASE}/:owner/:app/requests/:id/cancel`, () =>
          HttpResponse.json({ status: "ALREADY_COMPLETED" }, { status: 400 })
        )
      )
      yield* adapter.cancel!({ model: "epsilon-3-1-pro-text-to-video-channel-low-price", upstreamId: "req-7" })
    })
  )
})

protocolCases(server, {
  name: "epsilon",
  makeAdapter: (options) => Epsilon.make({ apiKey: "test-key", baseUrl: BASE, http: options }),
  model: "epsilon-3-1-fast-text-to-video-channel-low-price",
  input: { prompt: "a lighthouse at dusk", aspectRatio: "9:16", resolution: "720p" },
  submit: { method: "post", url: `${BASE}/fal-ai/veo3.1/fast` },
  poll: { method: "get", url: `${BASE}/fal-ai/veo3.1/requests/:id/status` },
  accepted: () => HttpResponse.json({ request_id: "job-1", status: "IN_QUEUE" }),
  running: () => HttpResponse.json({ status: "IN_PROGRESS" }, { status: 202 })
})
