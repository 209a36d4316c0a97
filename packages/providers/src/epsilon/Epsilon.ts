/**
 * The epsilon 3.1 video family (Pro and Fast; text, image, start/end frames) on fal's queue API
 * (`FalQueue`), each model picking its endpoint from the input: `first-last-frame-to-video` with a
 * last frame, else `image-to-video`; Fast image-to-video with 2 or 3 images `reference-to-video`.
 * `duration` is always 8 seconds, sent as "8s".
 */
import { Config } from "effect"
import type { Catalog, Provider } from "@taskmeter/kernel"
import * as FalQueue from "../fal/FalQueue.ts"
import * as Fields from "../utils/InputFields.ts"
import type * as HttpClient from "../utils/HttpClient.ts"
import * as ProviderConfig from "../utils/ProviderConfig.ts"

/** The fal app every endpoint below belongs to. */
export const APP = "fal-ai/veo3.1"

/** Endpoint ids per tier, relative to nothing: as fal names them. */
export const endpoints = {
  pro: {
    text: "fal-ai/veo3.1",
    image: "fal-ai/veo3.1/image-to-video",
    firstLast: "fal-ai/veo3.1/first-last-frame-to-video",
    reference: "fal-ai/veo3.1/reference-to-video"
  },
  fast: {
    text: "fal-ai/veo3.1/fast",
    image: "fal-ai/veo3.1/fast/image-to-video",
    firstLast: "fal-ai/veo3.1/fast/first-last-frame-to-video",
    reference: "fal-ai/veo3.1/reference-to-video"
  }
} as const

type Tier = keyof typeof endpoints

export const slugs = [
  "epsilon-3-1-pro-start-end-to-video-channel-low-price",
  "epsilon-3-1-fast-start-end-to-video-channel-low-price",
  "epsilon-3-1-pro-image-to-video-channel-low-price",
  "epsilon-3-1-fast-image-to-video-channel-low-price",
  "epsilon-3-1-pro-text-to-video-channel-low-price",
  "epsilon-3-1-fast-text-to-video-channel-low-price"
] as const

export type Options = ProviderConfig.AdapterOptions

const common = (input: Catalog.ModelInput) => ({
  prompt: Fields.string(input, "prompt"),
  aspect_ratio: Fields.string(input, "aspectRatio"),
  resolution: Fields.string(input, "resolution"),
  duration: "8s"
})

const startEnd = (tier: Tier): FalQueue.FalModel => ({
  output: "video",
  app: APP,
  request: (input) => {
    const first = Fields.string(input, "firstFrameUrl")
    const last = Fields.optionalString(input, "lastFrameUrl")
    return last === undefined
      ? { endpoint: endpoints[tier].image, input: { ...common(input), image_url: first } }
      : { endpoint: endpoints[tier].firstLast, input: { ...common(input), first_frame_url: first, last_frame_url: last } }
  }
})

const imageToVideo = (tier: Tier): FalQueue.FalModel => ({
  output: "video",
  app: APP,
  request: (input) => {
    const images = tier === "pro" ? [Fields.string(input, "imageUrl")] : Fields.strings(input, "imageUrls")
    return images.length === 1
      ? { endpoint: endpoints[tier].image, input: { ...common(input), image_url: images[0] } }
      : { endpoint: endpoints[tier].reference, input: { ...common(input), image_urls: images } }
  }
})

const textToVideo = (tier: Tier): FalQueue.FalModel => ({
  output: "video",
  app: APP,
  request: (input) => ({ endpoint: endpoints[tier].text, input: common(input) })
})

export const make = (options: Options): Provider.ProviderV1 =>
  FalQueue.make({
    ...options,
    provider: "epsilon",
    models: {
      "epsilon-3-1-pro-start-end-to-video-channel-low-price": startEnd("pro"),
      "epsilon-3-1-fast-start-end-to-video-channel-low-price": startEnd("fast"),
      "epsilon-3-1-pro-image-to-video-channel-low-price": imageToVideo("pro"),
      "epsilon-3-1-fast-image-to-video-channel-low-price": imageToVideo("fast"),
      "epsilon-3-1-pro-text-to-video-channel-low-price": textToVideo("pro"),
      "epsilon-3-1-fast-text-to-video-channel-low-price": textToVideo("fast")
    }
  })

/** `make` from EPSILON_API_KEY, EPSILON_BASE_URL and EPSILON_MAX_CONCURRENCY. */
export const configWith = (http?: HttpClient.HttpClient): Config.Config<Provider.ProviderV1> =>
  ProviderConfig.config("EPSILON", http).pipe(Config.map(make))

export const config: Config.Config<Provider.ProviderV1> = configWith()
