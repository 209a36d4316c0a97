/**
 * The picgen image family (2.5 Sunburst, 2.5 Flare, 2.0; text-to-image and image-to-image) on
 * Replicate's predictions API (`Replicate`). Every model takes the same input: `prompt`,
 * `image_input` (absent for text-to-image), `aspect_ratio` as given, `size` "1K" / "2K" / "4K"
 * and `max_images: 1`. An aspect ratio the upstream model lacks comes back as 422, which fails
 * the task as UPSTREAM_REJECTED_INPUT.
 */
import { Config } from "effect"
import type { Catalog, Provider } from "@taskmeter/kernel"
import * as Replicate from "../replicate/Replicate.ts"
import * as Fields from "../utils/InputFields.ts"
import type * as HttpClient from "../utils/HttpClient.ts"
import * as ProviderConfig from "../utils/ProviderConfig.ts"

/** Our slug -> Replicate's `owner/name`. */
export const upstreamModels = {
  "picgen-2-5-sunburst-image-to-image-economy": "bytedance/seedream-4.5",
  "picgen-2-5-sunburst-text-to-image-economy": "bytedance/seedream-4.5",
  "picgen-2-5-flare-image-to-image-economy": "bytedance/seedream-4",
  "picgen-2-5-flare-text-to-image-economy": "bytedance/seedream-4",
  "picgen-2-0-text-to-image-economy": "bytedance/seedream-3",
  "picgen-2-0-edit-economy": "bytedance/seedream-4"
} as const

export type Slug = keyof typeof upstreamModels

export interface Options extends ProviderConfig.FamilyOptions<Slug>, Pick<Replicate.Options, "preferWaitSeconds"> {}

const request = (model: string) => (input: Catalog.ModelInput) => {
  const images = Fields.strings(input, "imageUrls")
  return {
    model,
    input: {
      prompt: Fields.string(input, "prompt"),
      ...(images.length === 0 ? {} : { image_input: images }),
      aspect_ratio: Fields.string(input, "aspectRatio"),
      size: Fields.upperResolution(input),
      max_images: 1
    }
  }
}

export const make = (options: Options): Provider.ProviderV1 => {
  const ids: Record<Slug, string> = { ...upstreamModels, ...options.upstreamModels }
  return Replicate.make({
    ...options,
    provider: "picgen",
    models: Object.fromEntries(
      (Object.keys(upstreamModels) as Array<Slug>).map((slug) => [slug, { output: "image", request: request(ids[slug]) }])
    )
  })
}

/** `make` from PICGEN_API_KEY, PICGEN_BASE_URL and PICGEN_MAX_CONCURRENCY. */
export const configWith = (http?: HttpClient.HttpClient): Config.Config<Provider.ProviderV1> =>
  ProviderConfig.config("PICGEN", http).pipe(Config.map(make))

export const config: Config.Config<Provider.ProviderV1> = configWith()
