import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { http, HttpResponse } from "msw"
import { Song } from "@taskmeter/providers"
import { serve } from "./support/FakeServer.ts"
import { fakeSong, LYRICS } from "./support/FakeSong.ts"
import { protocolCases } from "./support/ProtocolCases.ts"
import { outputsOf, run } from "./support/Run.ts"

const BASE = "https://song.example.test"
const fake = fakeSong(BASE)
const server = serve(fake)

const adapter = Song.make({ apiKey: "test-key", baseUrl: BASE, callBackUrl: "https://taskmeter.example.test/hooks/song" })
const callBackUrl = (reference: string) => `https://taskmeter.example.test/hooks/song?reference=${reference}`

const songs = [
  {
    model: "song-single-v5-5",
    input: { description: "a folk song about a fox", title: "Little Fox" },
    sent: { customMode: false, instrumental: false, model: "V5_5", prompt: "a folk song about a fox (title: Little Fox)" }
  },
  {
    model: "song-single-v5",
    input: { description: "a folk song about a fox", make_instrumental: "true" },
    sent: { customMode: false, instrumental: true, model: "V5", prompt: "a folk song about a fox" }
  },
  {
    model: "song-single-v4-5",
    input: { description: "a folk song about a fox", title: "" },
    sent: { customMode: false, instrumental: false, model: "V4_5", prompt: "a folk song about a fox" }
  },
  ...(["v5-5", "v5", "v4-5"] as const).map((version) => ({
    model: `song-custom-${version}`,
    input: { title: "Little Fox", prompt: LYRICS, tags: "folk, warm" },
    sent: {
      customMode: true,
      instrumental: false,
      model: { "v5-5": "V5_5", v5: "V5", "v4-5": "V4_5" }[version],
      prompt: LYRICS,
      style: "folk, warm",
      title: "Little Fox"
    }
  }))
]

describe("song adapter", () => {
  it("serves the seven song models", () => {
    expect([...adapter.models].sort()).toEqual([...songs.map((s) => s.model), "song-lyrics"].sort())
  })

  for (const s of songs) {
    it.live(`${s.model}: generates music and returns both tracks as audio`, () =>
      Effect.gen(function* () {
        const { result } = yield* run(adapter, s.model, s.input)
        const [create, ...polls] = fake.requests
        const taskId = `music-${fake.jobs.size}`
        expect(create!.url.pathname).toBe("/api/v1/generate")
        expect(create!.headers.get("authorization")).toBe("Bearer test-key")
        expect(create!.body).toEqual({
          ...s.sent,
          callBackUrl: expect.stringMatching(/^https:\/\/taskmeter\.example\.test\/hooks\/song\?reference=task-\d+$/)
        })
        expect(polls.map((poll) => `${poll.url.pathname}?${poll.url.searchParams}`)).toEqual(
          Array.from({ length: 3 }, () => `/api/v1/generate/record-info?taskId=${taskId}`)
        )
        const outputs = outputsOf(result)
        expect(outputs.map((output) => [output.type, output.contentType, output.url])).toEqual([
          ["audio", "audio/mpeg", `https://cdn.example.test/results/${taskId}-1.mp3`],
          ["audio", "audio/mpeg", `https://cdn.example.test/results/${taskId}-2.mp3`]
        ])
        expect(outputs[0]!.metadata).toMatchObject({ trackId: `${taskId}-track-1`, durationSeconds: 121 })
      })
    )
  }

  it.live("song-lyrics: returns one text asset, title first", () =>
    Effect.gen(function* () {
      const submitted = yield* adapter.submit({
        model: "song-lyrics",
        input: { prompt: "a fox in the snow" },
        reference: "task-l"
      })
      expect(fake.requests[0]!.url.pathname).toBe("/api/v1/lyrics")
      expect(fake.requests[0]!.body).toEqual({ prompt: "a fox in the snow", callBackUrl: callBackUrl("task-l") })
      const poll = adapter.poll({ model: "song-lyrics", upstreamId: submitted.upstreamId, reference: "task-l" })
      expect(yield* poll).toEqual({ _tag: "Pending", progress: 0 })
      expect(yield* poll).toEqual({
        _tag: "Succeeded",
        outputs: [
          {
            type: "text",
            contentType: "text/plain; charset=utf-8",
            text: `Little Fox\n\n${LYRICS}\n`,
            metadata: { title: "Little Fox" }
          }
        ]
      })
      expect(fake.requests.at(-1)!.url.pathname).toBe("/api/v1/lyrics/record-info")
    })
  )

  it.live("failure statuses are Failed; a sensitive-word refusal says so; a failed callback still delivers", () =>
    Effect.gen(function* () {
      const record = (data: object) =>
        http.get(`${BASE}/api/v1/generate/record-info`, () => HttpResponse.json({ code: 200, msg: "success", data }))
      const poll = adapter.poll({ model: "song-custom-v5", upstreamId: "m", reference: "t" })
      server.use(record({ status: "GENERATE_AUDIO_FAILED", errorMessage: "model overloaded" }))
      expect(yield* poll).toEqual({
        _tag: "Failed",
        errorCode: "UPSTREAM_GENERATION_FAILED",
        message: "GENERATE_AUDIO_FAILED: model overloaded"
      })
      server.use(record({ status: "SENSITIVE_WORD_ERROR", errorMessage: null }))
      expect(yield* poll).toMatchObject({ _tag: "Failed", errorCode: "UPSTREAM_CONTENT_REJECTED" })
      server.use(
        record({
          status: "CALLBACK_EXCEPTION",
          response: { sunoData: [{ audioUrl: "https://cdn.example.test/a.mp3" }, { audioUrl: "https://cdn.example.test/b.mp3" }] }
        })
      )
      expect(yield* poll).toMatchObject({ _tag: "Succeeded", outputs: [{ type: "audio" }, { type: "audio" }] })
    })
  )
})

protocolCases(server, {
  name: "song",
  makeAdapter: (options) => Song.make({ apiKey: "test-key", baseUrl: BASE, http: options }),
  model: "song-custom-v5",
  input: { title: "Little Fox", prompt: LYRICS, tags: "folk" },
  submit: { method: "post", url: `${BASE}/api/v1/generate` },
  poll: { method: "get", url: `${BASE}/api/v1/generate/record-info` },
  accepted: () => HttpResponse.json({ code: 200, msg: "success", data: { taskId: "job-1" } }),
  running: () => HttpResponse.json({ code: 200, msg: "success", data: { taskId: "job-1", status: "FIRST_SUCCESS" } }),
  errorResponse: (status, message) => HttpResponse.json({ code: status, msg: message })
})
