/**
 * The song family on the music API (`SongApi`): single songs from a description (description mode,
 * a given `title` appended to the prompt), custom songs from lyrics (custom mode: `prompt` the
 * lyrics, `style` our `tags`), and lyrics alone. A song job yields two audio assets; a lyrics job
 * one text asset (title, then the lyrics with their section labels).
 */
import { Config } from "effect"
import type { Catalog, Provider } from "@taskmeter/kernel"
import * as Fields from "../utils/InputFields.ts"
import type * as HttpClient from "../utils/HttpClient.ts"
import * as ProviderConfig from "../utils/ProviderConfig.ts"
import * as SongApi from "./SongApi.ts"

/** Our slug -> the upstream's `model` (lyrics take none). */
export const upstreamModels = {
  "song-single-v5-5": "V5_5",
  "song-single-v5": "V5",
  "song-single-v4-5": "V4_5",
  "song-custom-v5-5": "V5_5",
  "song-custom-v5": "V5",
  "song-custom-v4-5": "V4_5"
} as const

export type Slug = keyof typeof upstreamModels

export interface Options extends ProviderConfig.FamilyOptions<Slug> {
  /** Our callback endpoint, which the upstream documents as required. */
  readonly callBackUrl?: string | undefined
}

const single = (model: string): SongApi.SongModel => ({
  kind: "music",
  request: (input: Catalog.ModelInput) => {
    const title = Fields.optionalString(input, "title")?.trim()
    const description = Fields.string(input, "description")
    return {
      customMode: false,
      instrumental: Fields.string(input, "make_instrumental") === "true",
      model,
      prompt: title ? `${description} (title: ${title})` : description
    }
  }
})

const custom = (model: string): SongApi.SongModel => ({
  kind: "music",
  request: (input: Catalog.ModelInput) => ({
    customMode: true,
    instrumental: false,
    model,
    prompt: Fields.string(input, "prompt"),
    style: Fields.string(input, "tags"),
    title: Fields.string(input, "title")
  })
})

export const make = (options: Options): Provider.ProviderV1 => {
  const ids: Record<Slug, string> = { ...upstreamModels, ...options.upstreamModels }
  return SongApi.make({
    ...options,
    provider: "song",
    models: {
      "song-single-v5-5": single(ids["song-single-v5-5"]),
      "song-single-v5": single(ids["song-single-v5"]),
      "song-single-v4-5": single(ids["song-single-v4-5"]),
      "song-custom-v5-5": custom(ids["song-custom-v5-5"]),
      "song-custom-v5": custom(ids["song-custom-v5"]),
      "song-custom-v4-5": custom(ids["song-custom-v4-5"]),
      "song-lyrics": { kind: "lyrics", request: (input) => ({ prompt: Fields.string(input, "prompt") }) }
    }
  })
}

/** `make` from SONG_API_KEY, SONG_BASE_URL, SONG_MAX_CONCURRENCY and SONG_CALLBACK_URL. */
export const configWith = (http?: HttpClient.HttpClient): Config.Config<Provider.ProviderV1> =>
  Config.all({
    options: ProviderConfig.config("SONG", http),
    callBackUrl: Config.option(Config.String("SONG_CALLBACK_URL"))
  }).pipe(
    Config.map(({ options, callBackUrl }) =>
      make({ ...options, callBackUrl: callBackUrl._tag === "Some" ? callBackUrl.value : undefined })
    )
  )

export const config: Config.Config<Provider.ProviderV1> = configWith()
