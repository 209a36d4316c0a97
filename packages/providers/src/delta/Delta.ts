/**
 * The delta video family (Omni Flash: from text, from 1 or 3 images, video edit) on the task
 * market protocol (`TaskMarket`). Images go as `image_urls` (1 image animates it, 3 are fused
 * as references), the edited video as `video_urls`, `duration` as whole seconds.
 */
import { Config } from "effect"
import type { Catalog, Provider } from "@taskmeter/kernel"
import * as TaskMarket from "../market/TaskMarket.ts"
import * as Fields from "../utils/InputFields.ts"
import type * as HttpClient from "../utils/HttpClient.ts"
import * as ProviderConfig from "../utils/ProviderConfig.ts"

export const upstreamModels = {
  "delta-omni-flash-image-to-video-economy": "omni-flash/image-to-video",
  "delta-omni-flash-text-to-video-economy": "omni-flash/text-to-video",
  "delta-omni-flash-video-edit-economy": "omni-flash/video-edit"
} as const

export type Slug = keyof typeof upstreamModels

export interface Options extends ProviderConfig.FamilyOptions<Slug>, Pick<TaskMarket.Options, "callBackUrl"> {}

const common = (input: Catalog.ModelInput) => ({
  prompt: Fields.string(input, "prompt"),
  resolution: Fields.string(input, "resolution"),
  aspect_ratio: Fields.string(input, "aspectRatio")
})

export const make = (options: Options): Provider.ProviderV1 => {
  const ids: Record<Slug, string> = { ...upstreamModels, ...options.upstreamModels }
  const models: Record<Slug, TaskMarket.MarketModel> = {
    "delta-omni-flash-image-to-video-economy": {
      output: "video",
      request: (input) => ({
        model: ids["delta-omni-flash-image-to-video-economy"],
        input: { ...common(input), image_urls: Fields.strings(input, "imageUrls"), duration: Fields.integer(input, "duration") }
      })
    },
    "delta-omni-flash-text-to-video-economy": {
      output: "video",
      request: (input) => ({
        model: ids["delta-omni-flash-text-to-video-economy"],
        input: { ...common(input), duration: Fields.integer(input, "duration") }
      })
    },
    "delta-omni-flash-video-edit-economy": {
      output: "video",
      request: (input) => {
        const images = Fields.strings(input, "imageUrls")
        return {
          model: ids["delta-omni-flash-video-edit-economy"],
          input: {
            ...common(input),
            video_urls: [Fields.string(input, "videoUrl")],
            ...(images.length === 0 ? {} : { image_urls: images })
          }
        }
      }
    }
  }
  return TaskMarket.make({ ...options, provider: "delta", models })
}

/** `make` from DELTA_API_KEY, DELTA_BASE_URL and DELTA_MAX_CONCURRENCY. */
export const configWith = (http?: HttpClient.HttpClient): Config.Config<Provider.ProviderV1> =>
  ProviderConfig.config("DELTA", http).pipe(Config.map(make))

export const config: Config.Config<Provider.ProviderV1> = configWith()
