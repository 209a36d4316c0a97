import { execFileSync } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { inflateSync } from "node:zlib"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import { TestClock } from "effect/testing"
import type { Provider } from "@taskmeter/kernel"
import { Simulated, SimulatedJournal } from "@taskmeter/providers"
import * as Dependencies from "../../../test/Dependencies.ts"
import { ShippedModels } from "./support/ShippedModels.ts"

// ffmpeg and ffprobe decode the files where the machine has them (test/Dependencies.ts; always under CI).
const hasFfmpeg = !Dependencies.isMissing("ffmpeg")

let counter = 0
const reference = () => `task-sim-${++counter}`

const complete = (adapter: Provider.ProviderV1, model: string, input: { readonly [field: string]: unknown }) =>
  Effect.map(adapter.submit({ model, input, reference: reference() }), (submitted) => {
    if (submitted._tag !== "Completed") throw new Error(`expected Completed, got ${submitted._tag}`)
    return submitted.outputs
  })

const pngSize = (bytes: Uint8Array) => {
  const buffer = Buffer.from(bytes)
  expect(buffer.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
  expect(buffer.toString("latin1", 12, 16)).toBe("IHDR")
  return { width: buffer.readUInt32BE(16), height: buffer.readUInt32BE(20) }
}

/** The IDAT payload inflates to one filter byte plus 3 bytes a pixel per row. */
const pngPixelsInflate = (bytes: Uint8Array) => {
  const buffer = Buffer.from(bytes)
  const { width, height } = pngSize(bytes)
  const idatLength = buffer.readUInt32BE(33)
  expect(buffer.toString("latin1", 37, 41)).toBe("IDAT")
  expect(inflateSync(buffer.subarray(41, 41 + idatLength)).length).toBe((width * 3 + 1) * height)
}

const probe = (bytes: Uint8Array, extension: string) => {
  const path = join(mkdtempSync(join(tmpdir(), "sim-")), `file.${extension}`)
  writeFileSync(path, bytes)
  const json = execFileSync("ffprobe", ["-v", "error", "-show_streams", "-show_format", "-of", "json", path], {
    encoding: "utf8"
  })
  // Decoding every frame proves more than the headers: errors go to stderr and fail the call.
  execFileSync("ffmpeg", ["-v", "error", "-xerror", "-i", path, "-f", "null", "-"], { stdio: ["ignore", "ignore", "pipe"] })
  return JSON.parse(json) as { streams: Array<Record<string, unknown>>; format: Record<string, unknown> }
}

describe("simulated provider", () => {
  const adapter = Simulated.make()

  it("serves all 33 models of the catalog", () => {
    expect(adapter.models).toHaveLength(33)
    expect([...adapter.models].sort()).toEqual([...ShippedModels.keys()].sort())
  })

  it.effect("draws PNGs shaped by the aspect ratio, marked simulated, the same for the same input", () =>
    Effect.gen(function* () {
      const input = { prompt: "a fox", aspectRatio: "16:9", resolution: "1k" }
      const [image] = yield* complete(adapter, "alpha-2-text-to-image-economy", input)
      expect(image).toMatchObject({
        type: "image",
        contentType: "image/png",
        metadata: { simulated: true, width: 256, height: 144 }
      })
      expect(pngSize(image!.bytes!)).toEqual({ width: 256, height: 144 })
      pngPixelsInflate(image!.bytes!)
      const [again] = yield* complete(adapter, "alpha-2-text-to-image-economy", input)
      expect(Buffer.from(again!.bytes!).equals(Buffer.from(image!.bytes!))).toBe(true)
      const [other] = yield* complete(adapter, "alpha-2-text-to-image-economy", { ...input, prompt: "a bear" })
      expect(Buffer.from(other!.bytes!).equals(Buffer.from(image!.bytes!))).toBe(false)
      const [tall] = yield* complete(adapter, "alpha-2-text-to-image-economy", { ...input, aspectRatio: "1:8" })
      expect(pngSize(tall!.bytes!)).toEqual({ width: 32, height: 256 })
      const [sized] = yield* complete(adapter, "gamma-imagine-image-text-to-image-economy", {
        prompt: "x",
        model: "g-4",
        aspectRatio: "784x1168"
      })
      expect(pngSize(sized!.bytes!)).toEqual({ width: 172, height: 256 })
    })
  )

  it.effect("delivers numImages distinct images for Imagine 2.0", () =>
    Effect.gen(function* () {
      const outputs = yield* complete(adapter, "gamma-imagine-2-0-text-to-image-economy", {
        prompt: "x",
        aspectRatio: "1:1",
        numImages: "5"
      })
      expect(outputs).toHaveLength(5)
      expect(new Set(outputs.map((output) => Buffer.from(output.bytes!).toString("base64"))).size).toBe(5)
    })
  )

  it.effect("produces two WAV songs per song task, with title and tags", () =>
    Effect.gen(function* () {
      const outputs = yield* complete(adapter, "song-custom-v5", {
        title: "Little Fox",
        prompt: "[Verse]\nla la",
        tags: "folk, warm"
      })
      expect(outputs).toHaveLength(2)
      for (const output of outputs) {
        const wav = Buffer.from(output.bytes!)
        expect([wav.toString("latin1", 0, 4), wav.toString("latin1", 8, 12)]).toEqual(["RIFF", "WAVE"])
        expect(wav.readUInt16LE(20)).toBe(1) // PCM
        expect(wav.readUInt32LE(24)).toBe(22_050)
        expect(wav.readUInt32LE(40)).toBe(22_050 * 2 * 6)
        expect(output).toMatchObject({
          type: "audio",
          contentType: "audio/wav",
          metadata: { simulated: true, tags: "folk, warm" }
        })
      }
      expect(outputs.map((output) => output.metadata?.["title"])).toEqual(["Little Fox", "Little Fox (take 2)"])
      expect(Buffer.from(outputs[0]!.bytes!).equals(Buffer.from(outputs[1]!.bytes!))).toBe(false)
    })
  )

  it.effect("writes lyrics with a title, style tags and structure labels, on the caller's topic", () =>
    Effect.gen(function* () {
      const [lyrics] = yield* complete(adapter, "song-lyrics", { prompt: "lanterns over the harbour" })
      expect(lyrics).toMatchObject({ type: "text", contentType: "text/plain; charset=utf-8", metadata: { simulated: true } })
      const text = lyrics!.text!
      expect(text).toMatch(/^Title: .+\nStyle: .+, .+\n/)
      for (const label of ["[Verse 1]", "[Chorus]", "[Verse 2]", "[Bridge]", "[Outro]"]) expect(text).toContain(label)
      expect(text.toLowerCase()).toMatch(/lanterns|harbour/)
    })
  )

  it.effect("makes an H.264 MP4 as long as asked, shaped by the aspect ratio", () =>
    Effect.gen(function* () {
      const [video] = yield* complete(adapter, "delta-omni-flash-text-to-video-economy", {
        prompt: "waves",
        duration: "4",
        aspectRatio: "9:16"
      })
      expect(video).toMatchObject({
        type: "video",
        contentType: "video/mp4",
        metadata: { simulated: true, width: 144, height: 256, durationSeconds: 4 }
      })
      const bytes = Buffer.from(video!.bytes!)
      expect(bytes.toString("latin1", 4, 12)).toBe("ftypisom")
      expect(bytes.includes(Buffer.from("avcC"))).toBe(true)
    })
  )

  if (hasFfmpeg)
    it("every file kind decodes with ffmpeg", () =>
      Effect.runPromise(
        Effect.gen(function* () {
          const [video] = yield* complete(adapter, "gamma-imagine-v1-5-text-to-video-economy", {
            prompt: "waves",
            duration: 7,
            aspectRatio: "3:2"
          })
          const mp4 = probe(video!.bytes!, "mp4")
          expect(mp4.streams[0]).toMatchObject({
            codec_name: "h264",
            profile: "Constrained Baseline",
            width: 256,
            height: 176,
            nb_frames: "56"
          })
          expect(Number(mp4.format["duration"])).toBeCloseTo(7, 1)
          const [image] = yield* complete(adapter, "picgen-2-0-text-to-image-economy", { prompt: "x", aspectRatio: "21:9" })
          expect(probe(image!.bytes!, "png").streams[0]).toMatchObject({ codec_name: "png", width: 256, height: 110 })
          const [song] = yield* complete(adapter, "song-single-v5", { description: "a waltz" })
          const wav = probe(song!.bytes!, "wav")
          expect(wav.streams[0]).toMatchObject({ codec_name: "pcm_s16le", sample_rate: "22050", channels: 1 })
          expect(Number(wav.format["duration"])).toBeCloseTo(6, 1)
        })
      ))

  it.effect("stays Pending for its delay, with progress, then succeeds", () =>
    Effect.gen(function* () {
      const delayed = Simulated.make({ delayMs: { video: 10_000 } })
      const submitted = yield* delayed.submit({
        model: "delta-omni-flash-text-to-video-economy",
        input: { prompt: "x", duration: "4" },
        reference: "r"
      })
      expect(submitted._tag).toBe("Accepted")
      const poll = delayed.poll({
        model: "delta-omni-flash-text-to-video-economy",
        upstreamId: submitted.upstreamId,
        reference: "r"
      })
      yield* TestClock.adjust(2_500)
      expect(yield* poll).toEqual({ _tag: "Pending", progress: 0.25 })
      yield* TestClock.adjust(7_500)
      expect(yield* poll).toMatchObject({ _tag: "Succeeded", outputs: [{ type: "video" }] })
      // Images have no delay configured: they complete at submit.
      expect(
        (yield* delayed.submit({ model: "alpha-2-text-to-image-economy", input: { prompt: "x" }, reference: "r2" }))._tag
      ).toBe("Completed")
    })
  )

  it.effect("cancels a job still Pending, which then polls Failed; a finished job stays finished", () =>
    Effect.gen(function* () {
      const delayed = Simulated.make({ delayMs: { video: 10_000 } })
      const model = "delta-omni-flash-text-to-video-economy"
      const first = yield* delayed.submit({ model, input: { prompt: "x", duration: "4" }, reference: "a" })
      const second = yield* delayed.submit({ model, input: { prompt: "y", duration: "4" }, reference: "b" })
      yield* delayed.cancel({ model, upstreamId: first.upstreamId })
      expect(yield* delayed.poll({ model, upstreamId: first.upstreamId, reference: "a" })).toMatchObject({
        _tag: "Failed",
        errorCode: "UPSTREAM_CANCELED"
      })
      yield* TestClock.adjust(10_000)
      yield* delayed.cancel({ model, upstreamId: second.upstreamId })
      expect(yield* delayed.poll({ model, upstreamId: second.upstreamId, reference: "b" })).toMatchObject({ _tag: "Succeeded" })
      expect(yield* delayed.poll({ model, upstreamId: first.upstreamId, reference: "a" })).toMatchObject({ _tag: "Failed" })
    })
  )

  it.effect("fails the jobs whose seed falls below failureRate, the same ones every time", () =>
    Effect.gen(function* () {
      const flaky = Simulated.make({ failureRate: 0.5 })
      const outcome = (prompt: string) =>
        Effect.gen(function* () {
          const submitted = yield* flaky.submit({
            model: "alpha-2-text-to-image-economy",
            input: { prompt },
            reference: reference()
          })
          if (submitted._tag === "Completed") return "ok"
          const polled = yield* flaky.poll({
            model: "alpha-2-text-to-image-economy",
            upstreamId: submitted.upstreamId,
            reference: "x"
          })
          expect(polled).toEqual({
            _tag: "Failed",
            errorCode: "SIMULATED_FAILURE",
            message: "the simulated job failed (failureRate)"
          })
          return "failed"
        })
      const prompts = Array.from({ length: 40 }, (_, i) => `prompt ${i}`)
      const first = yield* Effect.forEach(prompts, outcome)
      const second = yield* Effect.forEach(prompts, outcome)
      expect(second).toEqual(first)
      const failed = first.filter((o) => o === "failed").length
      expect(failed).toBeGreaterThan(8)
      expect(failed).toBeLessThan(32)
      const never = Simulated.make({ failureRate: 0 })
      const always = Simulated.make({ failureRate: 1 })
      expect((yield* never.submit({ model: "song-lyrics", input: { prompt: "x" }, reference: "a" }))._tag).toBe("Completed")
      expect((yield* always.submit({ model: "song-lyrics", input: { prompt: "x" }, reference: "a" }))._tag).toBe("Accepted")
    })
  )

  it.effect("is idempotent per reference and finds earlier submissions", () =>
    Effect.gen(function* () {
      const sim = Simulated.make({ delayMs: 1_000 })
      const first = yield* sim.submit({ model: "song-lyrics", input: { prompt: "x" }, reference: "same" })
      const second = yield* sim.submit({ model: "song-lyrics", input: { prompt: "y" }, reference: "same" })
      expect(second.upstreamId).toBe(first.upstreamId)
      expect(yield* sim.journal.size).toBe(1)
      expect(yield* sim.lookup({ model: "song-lyrics", reference: "same" })).toEqual({ upstreamId: first.upstreamId })
      expect(yield* sim.lookup({ model: "song-custom-v5", reference: "same" })).toBeUndefined()
      expect(yield* sim.lookup({ model: "song-lyrics", reference: "other" })).toBeUndefined()
    })
  )

  it.effect("polls an id issued by another instance (a restart), refuses ids it never issued", () =>
    Effect.gen(function* () {
      const before = Simulated.make({ delayMs: 1_000 })
      const submitted = yield* before.submit({ model: "song-lyrics", input: { prompt: "x" }, reference: "r" })
      yield* TestClock.adjust(1_000)
      const after = Simulated.make()
      expect(yield* after.poll({ model: "song-lyrics", upstreamId: submitted.upstreamId, reference: "r" })).toMatchObject({
        _tag: "Succeeded"
      })
      const foreign = yield* Effect.flip(after.poll({ model: "song-lyrics", upstreamId: "task_123", reference: "r" }))
      expect(foreign).toMatchObject({ reason: "Terminal", errorCode: "UPSTREAM_NOT_FOUND" })
      const otherModel = yield* Effect.flip(
        after.poll({ model: "song-custom-v5", upstreamId: submitted.upstreamId, reference: "r" })
      )
      expect(otherModel.reason).toBe("Terminal")
    })
  )

  it.live("a directory journal is shared between instances: the first submission of a reference wins", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "sim-journal-"))
      const one = Simulated.make({ delayMs: 60_000, journal: SimulatedJournal.directory(dir) })
      const two = Simulated.make({ delayMs: 60_000, journal: SimulatedJournal.directory(dir) })
      const [a, b] = yield* Effect.all(
        [
          one.submit({ model: "song-lyrics", input: { prompt: "a" }, reference: "shared" }),
          two.submit({ model: "song-lyrics", input: { prompt: "b" }, reference: "shared" })
        ],
        { concurrency: 2 }
      )
      expect(b.upstreamId).toBe(a.upstreamId)
      expect(yield* two.lookup({ model: "song-lyrics", reference: "shared" })).toEqual({ upstreamId: a.upstreamId })
      expect(yield* one.journal.size).toBe(1)
    })
  )

  it.effect("reads its settings from configuration", () =>
    Effect.gen(function* () {
      const sim = yield* Simulated.config.pipe(
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          ConfigProvider.fromUnknown({ SIMULATED_DELAY_MS: "2000", SIMULATED_FAILURE_RATE: "0", SIMULATED_MAX_CONCURRENCY: "4" })
        )
      )
      expect(sim.maxConcurrency).toBe(4)
      expect((yield* sim.submit({ model: "song-lyrics", input: { prompt: "x" }, reference: "c" }))._tag).toBe("Accepted")
    })
  )

  it.effect("SIMULATED_VIDEO_DELAY_MS holds video jobs Pending with progress while the others end at submit", () =>
    Effect.gen(function* () {
      const sim = yield* Simulated.config.pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown({ SIMULATED_VIDEO_DELAY_MS: "4000" }))
      )
      expect((yield* sim.submit({ model: "song-lyrics", input: { prompt: "x" }, reference: "a" }))._tag).toBe("Completed")
      const model = "delta-omni-flash-text-to-video-economy"
      const input = { prompt: "waves", duration: "6", resolution: "720p" }
      const submitted = yield* sim.submit({ model, input, reference: "v" })
      expect(submitted._tag).toBe("Accepted")
      yield* TestClock.adjust("1 second")
      expect(yield* sim.poll({ model, upstreamId: submitted.upstreamId, reference: "v" })).toEqual({
        _tag: "Pending",
        progress: 0.25
      })
    })
  )
})
