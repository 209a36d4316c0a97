/**
 * Turns a simulated job into real files: PNG images (long side 256 px, shaped by the aspect
 * ratio), H.264 MP4 videos (long side 256 px, 8 frames a second, as long as asked), two WAV
 * songs of six seconds, or lyrics as text. Every output's metadata says `simulated: true`.
 */
import type { Provider } from "@taskmeter/kernel"
import * as H264 from "./H264.ts"
import * as Lyrics from "./Lyrics.ts"
import * as Mp4 from "./Mp4.ts"
import * as Music from "./Music.ts"
import * as Pictures from "./Pictures.ts"
import type { Plan } from "./Plan.ts"
import * as Png from "./Png.ts"
import * as Wav from "./Wav.ts"

export const LONG_SIDE = 256
export const FPS = 8
export const SONG_SECONDS = 6
export const SONGS_PER_TASK = 2

const metadata = (plan: Plan, extra: { readonly [key: string]: unknown }) => ({
  simulated: true,
  model: plan.model,
  seed: plan.seed,
  ...extra
})

export const outputs = (plan: Plan): ReadonlyArray<Provider.ProviderOutput> => {
  switch (plan.kind) {
    case "image": {
      const { width, height } = Pictures.dimensions(plan.ratio ?? "1:1", LONG_SIDE)
      return Array.from({ length: plan.count ?? 1 }, (_, index) => ({
        type: "image" as const,
        contentType: "image/png",
        bytes: Png.encode(width, height, Pictures.image(`${plan.seed}/${index}`, width, height)),
        metadata: metadata(plan, { width, height, index })
      }))
    }
    case "video": {
      const { width, height } = Pictures.dimensions(plan.ratio ?? "16:9", LONG_SIDE, 16)
      const seconds = plan.seconds ?? 8
      const stream = H264.encode(width, height, Pictures.videoFrames(plan.seed, width, height, Math.round(seconds * FPS)))
      return [
        {
          type: "video",
          contentType: "video/mp4",
          bytes: Mp4.encode({ width, height, fps: FPS, stream }),
          metadata: metadata(plan, { width, height, durationSeconds: seconds, fps: FPS, codec: "avc1.42C01E" })
        }
      ]
    }
    case "audio":
      return Array.from({ length: SONGS_PER_TASK }, (_, index) => ({
        type: "audio" as const,
        contentType: "audio/wav",
        bytes: Wav.encode(Music.melody(`${plan.seed}/${index}`, SONG_SECONDS), Music.SAMPLE_RATE),
        metadata: metadata(plan, {
          title: index === 0 ? plan.title : `${plan.title} (take ${index + 1})`,
          tags: plan.tags,
          instrumental: plan.instrumental ?? false,
          durationSeconds: SONG_SECONDS
        })
      }))
    case "text": {
      const text = Lyrics.lyrics(plan.seed, plan.topic ?? "")
      return [
        {
          type: "text",
          contentType: "text/plain; charset=utf-8",
          text,
          metadata: metadata(plan, { title: Lyrics.title(plan.seed, plan.topic ?? "") })
        }
      ]
    }
  }
}
