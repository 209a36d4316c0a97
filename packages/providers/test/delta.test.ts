import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { HttpResponse } from "msw"
import { Delta } from "@taskmeter/providers"
import { fakeMarket } from "./support/FakeMarket.ts"
import { serve } from "./support/FakeServer.ts"
import { protocolCases } from "./support/ProtocolCases.ts"
import { outputsOf, run } from "./support/Run.ts"

const BASE = "https://market.example.test"
const IMG = "https://media.example.test/inputs/sample.png"
const VID = "https://media.example.test/inputs/clip.mp4"
const fake = fakeMarket(BASE)
const server = serve(fake)

const adapter = Delta.make({ apiKey: "test-key", baseUrl: BASE })

const cases = [
  {
    model: "delta-omni-flash-image-to-video-economy",
    input: { prompt: "fuse them", imageUrls: [IMG, IMG, IMG], duration: "10", resolution: "1080p" },
    sent: {
      model: "omni-flash/image-to-video",
      input: { prompt: "fuse them", resolution: "1080p", aspect_ratio: "16:9", image_urls: [IMG, IMG, IMG], duration: 10 }
    }
  },
  {
    model: "delta-omni-flash-text-to-video-economy",
    input: { prompt: "a storm", aspectRatio: "9:16" },
    sent: {
      model: "omni-flash/text-to-video",
      input: { prompt: "a storm", resolution: "720p", aspect_ratio: "9:16", duration: 6 }
    }
  },
  {
    model: "delta-omni-flash-video-edit-economy",
    input: { prompt: "make it snow", videoUrl: VID, imageUrls: [IMG] },
    sent: {
      model: "omni-flash/video-edit",
      input: { prompt: "make it snow", resolution: "720p", aspect_ratio: "16:9", video_urls: [VID], image_urls: [IMG] }
    }
  }
] as const

describe("delta adapter", () => {
  it("serves the three delta models", () => {
    expect([...adapter.models].sort()).toEqual(cases.map((c) => c.model).sort())
  })

  for (const c of cases) {
    it.live(`${c.model}: sends the market request and returns the video`, () =>
      Effect.gen(function* () {
        const { result } = yield* run(adapter, c.model, c.input)
        expect(fake.requests[0]!.body).toEqual(c.sent)
        expect(outputsOf(result)).toEqual([
          { type: "video", url: `https://cdn.example.test/results/task_${fake.jobs.size}-0.mp4`, contentType: "video/mp4" }
        ])
      })
    )
  }

  it.live("a video edit without images sends no image_urls", () =>
    Effect.gen(function* () {
      yield* adapter.submit({
        model: "delta-omni-flash-video-edit-economy",
        input: { prompt: "x", videoUrl: VID, resolution: "720p", aspectRatio: "16:9" },
        reference: "t"
      })
      expect(fake.requests[0]!.body).not.toHaveProperty("input.image_urls")
    })
  )
})

protocolCases(server, {
  name: "delta",
  makeAdapter: (options) => Delta.make({ apiKey: "test-key", baseUrl: BASE, http: options }),
  model: "delta-omni-flash-text-to-video-economy",
  input: { prompt: "a storm", duration: "6", resolution: "720p", aspectRatio: "16:9" },
  submit: { method: "post", url: `${BASE}/api/v1/jobs/createTask` },
  poll: { method: "get", url: `${BASE}/api/v1/jobs/recordInfo` },
  accepted: () => HttpResponse.json({ code: 200, msg: "success", data: { taskId: "job-1" } }),
  running: () => HttpResponse.json({ code: 200, msg: "success", data: { taskId: "job-1", state: "waiting" } })
})
