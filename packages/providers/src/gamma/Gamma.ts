/**
 * The gamma family on the task market protocol (`TaskMarket`): Imagine 2.0 (a fixed batch per job;
 * the task delivers the first `numImages` and is billed for what it delivers), Imagine Image (its
 * `model` sent as `version`, pixel sizes as aspect ratios) and Imagine v1.5 video (`duration` a
 * string of seconds, `mode: "normal"`).
 */
import { Config } from "effect"
import type { Catalog, Provider } from "@taskmeter/kernel"
import * as TaskMarket from "../market/TaskMarket.ts"
import * as Fields from "../utils/InputFields.ts"
import type * as HttpClient from "../utils/HttpClient.ts"
import * as ProviderConfig from "../utils/ProviderConfig.ts"

export const upstreamModels = {
  "gamma-imagine-2-0-text-to-image-economy": "grok-imagine/text-to-image",
  "gamma-imagine-image-text-to-image-economy": "grok-imagine/text-to-image",
  "gamma-imagine-image-image-to-image-economy": "grok-imagine/image-to-image",
  "gamma-imagine-v1-5-text-to-video-economy": "grok-imagine/text-to-video",
  "gamma-imagine-v1-5-image-to-video-economy": "grok-imagine/image-to-video"
} as const

export type Slug = keyof typeof upstreamModels

export interface Options extends ProviderConfig.FamilyOptions<Slug>, Pick<TaskMarket.Options, "callBackUrl"> {}

const RATIO_OF_SIZE: { readonly [size: string]: string } = {
  "960x960": "1:1",
  "720x1280": "9:16",
  "1280x720": "16:9",
  "1168x784": "3:2",
  "784x1168": "2:3"
}

const video = (input: Catalog.ModelInput) => ({
  prompt: Fields.string(input, "prompt"),
  aspect_ratio: Fields.string(input, "aspectRatio"),
  resolution: Fields.string(input, "resolution"),
  duration: String(Fields.integer(input, "duration")),
  mode: "normal"
})

export const make = (options: Options): Provider.ProviderV1 => {
  const ids: Record<Slug, string> = { ...upstreamModels, ...options.upstreamModels }
  const models: Record<Slug, TaskMarket.MarketModel> = {
    "gamma-imagine-2-0-text-to-image-economy": {
      output: "image",
      request: (input) => ({
        model: ids["gamma-imagine-2-0-text-to-image-economy"],
        input: { prompt: Fields.string(input, "prompt"), aspect_ratio: Fields.string(input, "aspectRatio") }
      }),
      maxOutputs: (input) => Fields.integer(input, "numImages")
    },
    "gamma-imagine-image-text-to-image-economy": {
      output: "image",
      request: (input) => {
        const size = Fields.optionalString(input, "aspectRatio")
        return {
          model: ids["gamma-imagine-image-text-to-image-economy"],
          input: {
            prompt: Fields.string(input, "prompt"),
            version: Fields.string(input, "model"),
            ...(size === undefined ? {} : { aspect_ratio: RATIO_OF_SIZE[size] ?? size })
          }
        }
      }
    },
    "gamma-imagine-image-image-to-image-economy": {
      output: "image",
      request: (input) => {
        const image = Fields.optionalString(input, "imageUrl")
        return {
          model: ids["gamma-imagine-image-image-to-image-economy"],
          input: {
            prompt: Fields.string(input, "prompt"),
            version: Fields.string(input, "model"),
            ...(image === undefined ? {} : { image_urls: [image] })
          }
        }
      }
    },
    "gamma-imagine-v1-5-text-to-video-economy": {
      output: "video",
      request: (input) => ({ model: ids["gamma-imagine-v1-5-text-to-video-economy"], input: video(input) })
    },
    "gamma-imagine-v1-5-image-to-video-economy": {
      output: "video",
      request: (input) => ({
        model: ids["gamma-imagine-v1-5-image-to-video-economy"],
        input: { ...video(input), image_urls: Fields.strings(input, "imageUrls") }
      })
    }
  }
  return TaskMarket.make({ ...options, provider: "gamma", models })
}

/** `make` from GAMMA_API_KEY, GAMMA_BASE_URL and GAMMA_MAX_CONCURRENCY. */
export const configWith = (http?: HttpClient.HttpClient): Config.Config<Provider.ProviderV1> =>
  ProviderConfig.config("GAMMA", http).pipe(Config.map(make))

export const config: Config.Config<Provider.ProviderV1> = configWith()
