/**
 * The alpha image family (6 models) on the task market protocol (`TaskMarket`). Pro and 2 take
 * `image_input` and `resolution` ("1K", "2K", "4K"); 2 Lite takes `image_urls` and no
 * resolution. Text-to-image and edit share one upstream model: an empty image list means
 * text-to-image.
 */
import { Config } from "effect"
import type { Catalog, Provider } from "@taskmeter/kernel"
import * as TaskMarket from "../market/TaskMarket.ts"
import * as Fields from "../utils/InputFields.ts"
import type * as HttpClient from "../utils/HttpClient.ts"
import * as ProviderConfig from "../utils/ProviderConfig.ts"

/** Our slug -> the market's model id. */
export const upstreamModels = {
  "alpha-pro-text-to-image-economy": "nano-banana-pro",
  "alpha-pro-edit-economy": "nano-banana-pro",
  "alpha-2-lite-image-to-image-economy": "nano-banana-2-lite",
  "alpha-2-lite-text-to-image-economy": "nano-banana-2-lite",
  "alpha-2-image-to-image-economy": "nano-banana-2",
  "alpha-2-text-to-image-economy": "nano-banana-2"
} as const

export type Slug = keyof typeof upstreamModels

export interface Options extends ProviderConfig.FamilyOptions<Slug>, Pick<TaskMarket.Options, "callBackUrl"> {}

const withResolution =
  (model: string) =>
  (input: Catalog.ModelInput): TaskMarket.MarketRequest => ({
    model,
    input: {
      prompt: Fields.string(input, "prompt"),
      image_input: Fields.strings(input, "imageUrls"),
      aspect_ratio: Fields.string(input, "aspectRatio"),
      resolution: Fields.upperResolution(input),
      output_format: "png"
    }
  })

const lite =
  (model: string) =>
  (input: Catalog.ModelInput): TaskMarket.MarketRequest => ({
    model,
    input: {
      prompt: Fields.string(input, "prompt"),
      image_urls: Fields.strings(input, "imageUrls"),
      aspect_ratio: Fields.string(input, "aspectRatio")
    }
  })

export const make = (options: Options): Provider.ProviderV1 => {
  const ids: Record<Slug, string> = { ...upstreamModels, ...options.upstreamModels }
  const entry = (slug: Slug): TaskMarket.MarketModel => ({
    output: "image",
    request: (slug.startsWith("alpha-2-lite-") ? lite : withResolution)(ids[slug])
  })
  return TaskMarket.make({
    ...options,
    provider: "alpha",
    models: Object.fromEntries((Object.keys(upstreamModels) as Array<Slug>).map((slug) => [slug, entry(slug)]))
  })
}

/** `make` from ALPHA_API_KEY, ALPHA_BASE_URL and ALPHA_MAX_CONCURRENCY. */
export const configWith = (http?: HttpClient.HttpClient): Config.Config<Provider.ProviderV1> =>
  ProviderConfig.config("ALPHA", http).pipe(Config.map(make))

export const config: Config.Config<Provider.ProviderV1> = configWith()
