/**
 * The client reference of each real protocol: a submit with the task's callback URL sends it the
 * way the upstream takes it (fal's `fal_webhook`, Replicate's `webhook`, the market's and the song
 * API's `callBackUrl`), and `callback` reads the job the upstream's callback body names.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Catalog } from "@taskmeter/kernel"
import { Alpha, Epsilon, Picgen, Song } from "@taskmeter/providers"
import { SampleInputs } from "@taskmeter/providers/testing"
import { fakeFal } from "./support/FakeFal.ts"
import { fakeMarket } from "./support/FakeMarket.ts"
import { fakeReplicate } from "./support/FakeReplicate.ts"
import { serve } from "./support/FakeServer.ts"
import { fakeSong } from "./support/FakeSong.ts"
import { ShippedModels } from "./support/ShippedModels.ts"

const CALLBACK = "https://taskmeter.example.test/callbacks/v1/acct_1/task_1/c2lnbmVk"
const market = fakeMarket("https://market.example.test")
const fal = fakeFal("https://fal.example.test")
const replicate = fakeReplicate("https://replicate.example.test")
const song = fakeSong("https://song.example.test")
serve({ handlers: [...market.handlers, ...fal.handlers, ...replicate.handlers, ...song.handlers], requests: [] })

const inputOf = (model: string): Catalog.ModelInput => SampleInputs.sampleInput(ShippedModels.get(model)!)

const families = [
  {
    name: "the task market (alpha)",
    adapter: Alpha.make({
      apiKey: "test-key",
      baseUrl: "https://market.example.test",
      callBackUrl: "https://ops.example.test/hook"
    }),
    model: "alpha-2-text-to-image-economy",
    requests: market.requests,
    sent: (body: any, url: URL) => [body.callBackUrl, url.searchParams.get("fal_webhook")],
    expected: [CALLBACK, null],
    body: (id: string) => ({ code: 200, msg: "success", data: { taskId: id, state: "success" } }),
    none: { code: 200, msg: "success", data: {} }
  },
  {
    name: "the fal queue (epsilon)",
    adapter: Epsilon.make({ apiKey: "test-key", baseUrl: "https://fal.example.test" }),
    model: "epsilon-3-1-fast-text-to-video-channel-low-price",
    requests: fal.requests,
    sent: (_body: any, url: URL) => [url.searchParams.get("fal_webhook")],
    expected: [CALLBACK],
    body: (id: string) => ({ request_id: id, gateway_request_id: id, status: "OK", payload: {} }),
    none: { status: "OK", payload: {} }
  },
  {
    name: "Replicate (picgen)",
    adapter: Picgen.make({ apiKey: "test-key", baseUrl: "https://replicate.example.test" }),
    model: "picgen-2-5-sunburst-text-to-image-economy",
    requests: replicate.requests,
    sent: (body: any) => [body.webhook, body.webhook_events_filter],
    expected: [CALLBACK, ["completed"]],
    body: (id: string) => ({ id, status: "succeeded", output: ["https://cdn.example.test/x.png"] }),
    none: { status: "succeeded" }
  },
  {
    name: "the song API (song)",
    adapter: Song.make({
      apiKey: "test-key",
      baseUrl: "https://song.example.test",
      callBackUrl: "https://ops.example.test/hook"
    }),
    model: "song-single-v5",
    requests: song.requests,
    sent: (body: any) => [body.callBackUrl],
    expected: [CALLBACK],
    body: (id: string) => ({ code: 200, msg: "All generated successfully.", data: { callbackType: "complete", task_id: id } }),
    none: { code: 200, msg: "ok", data: { callbackType: "complete" } }
  }
]

describe("provider callbacks", () => {
  for (const family of families) {
    it.effect(`${family.name}: sends the task's callback URL and reads the job a callback names`, () =>
      Effect.gen(function* () {
        const input = inputOf(family.model)
        family.requests.length = 0
        const submitted = yield* family.adapter.submit({
          model: family.model,
          input,
          reference: "task_1",
          callbackUrl: CALLBACK
        })
        expect(submitted._tag).toBe("Accepted")
        const post = family.requests.find((request) => request.method === "POST")!
        expect(family.sent(post.body, post.url)).toEqual(family.expected)

        const callback = family.adapter.callback!
        expect(yield* callback({ model: family.model, input, body: family.body(submitted.upstreamId) })).toBe(
          submitted.upstreamId
        )
        expect(yield* callback({ model: family.model, input, body: family.none })).toBeUndefined()
        expect(yield* callback({ model: family.model, input, body: "not an object" })).toBeUndefined()
      })
    )
  }

  it.effect("without a callback URL, a configured callBackUrl still carries the reference (market, song)", () =>
    Effect.gen(function* () {
      const [alpha, , , songFamily] = families
      for (const family of [alpha!, songFamily!]) {
        family.requests.length = 0
        yield* family.adapter.submit({ model: family.model, input: inputOf(family.model), reference: "task_2" })
        const post = family.requests.find((request) => request.method === "POST")!
        expect((post.body as { callBackUrl: string }).callBackUrl).toBe("https://ops.example.test/hook?reference=task_2")
      }
    })
  )
})
