import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { HttpResponse } from "msw"
import { Gamma } from "@taskmeter/providers"
import { fakeMarket } from "./support/FakeMarket.ts"
import { serve } from "./support/FakeServer.ts"
import { protocolCases } from "./support/ProtocolCases.ts"
import { outputsOf, run } from "./support/Run.ts"

const BASE = "https://market.example.test"
const IMG = "https://media.example.test/inputs/sample.png"
/** Imagine 2.0 returns a batch of six images per job. */
const fake = fakeMarket(BASE, { results: (model) => (model === "grok-imagine/text-to-image" ? 6 : 1) })
const server = serve(fake)

const adapter = Gamma.make({ apiKey: "test-key", baseUrl: BASE })

const cases = [
  {
    model: "gamma-imagine-2-0-text-to-image-economy",
    input: { prompt: "three foxes", aspectRatio: "3:2", numImages: "3" },
    sent: { model: "grok-imagine/text-to-image", input: { prompt: "three foxes", aspect_ratio: "3:2" } },
    outputs: 3
  },
  {
    model: "gamma-imagine-image-text-to-image-economy",
    input: { prompt: "a lantern", model: "g-4", aspectRatio: "1168x784" },
    sent: { model: "grok-imagine/text-to-image", input: { prompt: "a lantern", version: "g-4", aspect_ratio: "3:2" } },
    outputs: 6
  },
  {
    model: "gamma-imagine-image-image-to-image-economy",
    input: { prompt: "as a mosaic", imageUrl: IMG },
    sent: { model: "grok-imagine/image-to-image", input: { prompt: "as a mosaic", version: "g-4.2", image_urls: [IMG] } },
    outputs: 1
  },
  {
    model: "gamma-imagine-v1-5-text-to-video-economy",
    input: { prompt: "waves", duration: 9 },
    sent: {
      model: "grok-imagine/text-to-video",
      input: { prompt: "waves", aspect_ratio: "2:3", resolution: "720p", duration: "9", mode: "normal" }
    },
    outputs: 1
  },
  {
    model: "gamma-imagine-v1-5-image-to-video-economy",
    input: { prompt: "the fox runs", imageUrls: [IMG, IMG] },
    sent: {
      model: "grok-imagine/image-to-video",
      input: {
        prompt: "the fox runs",
        aspect_ratio: "16:9",
        resolution: "480p",
        duration: "6",
        mode: "normal",
        image_urls: [IMG, IMG]
      }
    },
    outputs: 1
  }
] as const

describe("gamma adapter", () => {
  it("serves the five gamma models", () => {
    expect([...adapter.models].sort()).toEqual(cases.map((c) => c.model).sort())
  })

  for (const c of cases) {
    it.live(`${c.model}: sends the market request and returns ${c.outputs} result(s)`, () =>
      Effect.gen(function* () {
        const { result } = yield* run(adapter, c.model, c.input)
        expect(fake.requests[0]!.headers.get("authorization")).toBe("Bearer test-key")
        expect(fake.requests[0]!.body).toEqual(c.sent)
        const outputs = outputsOf(result)
        expect(outputs).toHaveLength(c.outputs)
        const type = c.model.includes("video") ? "video" : "image"
        expect(
          outputs.every((output) => output.type === type && output.contentType === (type === "video" ? "video/mp4" : "image/png"))
        ).toBe(true)
      })
    )
  }

  it.live("numImages survives in the upstream id until the poll, and fewer delivered images are all returned", () =>
    Effect.gen(function* () {
      const submitted = yield* adapter.submit({
        model: "gamma-imagine-2-0-text-to-image-economy",
        input: { prompt: "x", aspectRatio: "1:1", numImages: "12" },
        reference: "t"
      })
      expect(submitted).toEqual({ _tag: "Accepted", upstreamId: `task_${fake.jobs.size}#keep=12` })
      yield* adapter.poll({ model: "gamma-imagine-2-0-text-to-image-economy", upstreamId: submitted.upstreamId, reference: "t" })
      const done = yield* adapter.poll({
        model: "gamma-imagine-2-0-text-to-image-economy",
        upstreamId: submitted.upstreamId,
        reference: "t"
      })
      expect(done._tag === "Succeeded" && done.outputs).toHaveLength(6)
      expect(fake.requests.at(-1)!.url.searchParams.get("taskId")).toBe(`task_${fake.jobs.size}`)
    })
  )
})

protocolCases(server, {
  name: "gamma",
  makeAdapter: (options) => Gamma.make({ apiKey: "test-key", baseUrl: BASE, http: options }),
  model: "gamma-imagine-v1-5-text-to-video-economy",
  input: { prompt: "waves", aspectRatio: "2:3", resolution: "720p", duration: 6 },
  submit: { method: "post", url: `${BASE}/api/v1/jobs/createTask` },
  poll: { method: "get", url: `${BASE}/api/v1/jobs/recordInfo` },
  accepted: () => HttpResponse.json({ code: 200, msg: "success", data: { taskId: "job-1" } }),
  running: () => HttpResponse.json({ code: 200, msg: "success", data: { taskId: "job-1", state: "queuing" } }),
  errorResponse: (status, message) => HttpResponse.json({ code: status, msg: message })
})
