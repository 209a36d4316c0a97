import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { http, HttpResponse } from "msw"
import { Picgen } from "@taskmeter/providers"
import { fakeReplicate } from "./support/FakeReplicate.ts"
import { serve } from "./support/FakeServer.ts"
import { protocolCases } from "./support/ProtocolCases.ts"
import { outputsOf, run } from "./support/Run.ts"

const BASE = "https://replicate.example.test"
const IMG = "https://media.example.test/inputs/sample.png"
const fake = fakeReplicate(BASE)
const server = serve(fake)

const adapter = Picgen.make({ apiKey: "test-key", baseUrl: BASE })

const cases = [
  ["picgen-2-5-sunburst-image-to-image-economy", "bytedance/seedream-4.5", { prompt: "ink", imageUrls: [IMG] }],
  ["picgen-2-5-sunburst-text-to-image-economy", "bytedance/seedream-4.5", { prompt: "ink", resolution: "2k" }],
  ["picgen-2-5-flare-image-to-image-economy", "bytedance/seedream-4", { prompt: "ink", imageUrls: [IMG, IMG] }],
  ["picgen-2-5-flare-text-to-image-economy", "bytedance/seedream-4", { prompt: "ink", aspectRatio: "21:9" }],
  ["picgen-2-0-text-to-image-economy", "bytedance/seedream-3", { prompt: "ink", aspectRatio: "1:3" }],
  ["picgen-2-0-edit-economy", "bytedance/seedream-4", { prompt: "ink", imageUrls: [IMG], resolution: "4k" }]
] as const

describe("picgen adapter", () => {
  it("serves the six picgen models", () => {
    expect([...adapter.models].sort()).toEqual(cases.map(([model]) => model).sort())
  })

  for (const [model, upstream, overrides] of cases) {
    it.live(`${model}: creates a ${upstream} prediction and polls it`, () =>
      Effect.gen(function* () {
        const { input, result } = yield* run(adapter, model, overrides)
        const [create, ...polls] = fake.requests
        const id = `pred${fake.jobs.size}`
        expect(create!.url.pathname).toBe(`/v1/models/${upstream}/predictions`)
        expect(create!.headers.get("authorization")).toBe("Bearer test-key")
        expect(create!.headers.get("prefer")).toBeNull()
        const images = "imageUrls" in overrides ? { image_input: overrides.imageUrls } : {}
        expect(create!.body).toEqual({
          input: {
            prompt: "ink",
            ...images,
            aspect_ratio: input["aspectRatio"],
            size: String(input["resolution"]).toUpperCase(),
            max_images: 1
          }
        })
        expect(polls.map((poll) => poll.url.pathname)).toEqual([`/v1/predictions/${id}`, `/v1/predictions/${id}`])
        expect(outputsOf(result)).toEqual([
          { type: "image", url: `https://cdn.example.test/results/${id}.png`, contentType: "image/png" }
        ])
      })
    )
  }

  it.live("with Prefer: wait, a fast prediction comes back Completed", () =>
    Effect.gen(function* () {
      const waiting = Picgen.make({ apiKey: "test-key", baseUrl: BASE, preferWaitSeconds: 5 })
      const submitted = yield* waiting.submit({
        model: "picgen-2-5-flare-text-to-image-economy",
        input: { prompt: "ink", aspectRatio: "1:1", resolution: "1k" },
        reference: "t"
      })
      expect(fake.requests[0]!.headers.get("prefer")).toBe("wait=5")
      expect(submitted).toMatchObject({
        _tag: "Completed",
        upstreamId: `pred${fake.jobs.size}`,
        outputs: [{ type: "image", contentType: "image/png" }]
      })
    })
  )

  it.live("failed and canceled predictions are Failed with their codes", () =>
    Effect.gen(function* () {
      const prediction = (body: object) => http.get(`${BASE}/v1/predictions/:id`, () => HttpResponse.json({ id: "p", ...body }))
      const poll = adapter.poll({ model: "picgen-2-0-edit-economy", upstreamId: "p", reference: "t" })
      server.use(prediction({ status: "failed", error: "NSFW content detected" }))
      expect(yield* poll).toEqual({ _tag: "Failed", errorCode: "UPSTREAM_GENERATION_FAILED", message: "NSFW content detected" })
      server.use(prediction({ status: "canceled" }))
      expect(yield* poll).toMatchObject({ _tag: "Failed", errorCode: "UPSTREAM_CANCELED" })
    })
  )

  it.live("cancel posts to the prediction's cancel URL", () =>
    Effect.gen(function* () {
      yield* adapter.cancel!({ model: "picgen-2-0-edit-economy", upstreamId: "pred9" })
      expect(fake.requests.map((r) => `${r.method} ${r.url.pathname}`)).toEqual(["POST /v1/predictions/pred9/cancel"])
    })
  )
})

protocolCases(server, {
  name: "picgen",
  makeAdapter: (options) => Picgen.make({ apiKey: "test-key", baseUrl: BASE, http: options }),
  model: "picgen-2-5-flare-text-to-image-economy",
  input: { prompt: "ink", aspectRatio: "1:1", resolution: "1k" },
  submit: { method: "post", url: `${BASE}/v1/models/:owner/:name/predictions` },
  poll: { method: "get", url: `${BASE}/v1/predictions/:id` },
  accepted: () => HttpResponse.json({ id: "job-1", status: "starting", output: null }, { status: 201 }),
  running: () => HttpResponse.json({ id: "job-1", status: "processing", output: null })
})
