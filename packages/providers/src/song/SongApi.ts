/**
 * The music API the song family runs on (the Suno API as kie.ai serves it, docs.kie.ai/suno-api),
 * in the same `{ code, msg, data }` envelope as the task market:
 *
 * - music: `POST {base}/api/v1/generate` with `{ prompt, customMode, instrumental, model,
 *   style?, title?, callBackUrl }`, then `GET {base}/api/v1/generate/record-info?taskId=…`;
 *   `status` goes PENDING, TEXT_SUCCESS, FIRST_SUCCESS, SUCCESS (or a failure status) and
 *   `response.sunoData` lists the tracks, two per job;
 * - lyrics: `POST {base}/api/v1/lyrics` with `{ prompt, callBackUrl }`, then
 *   `GET {base}/api/v1/lyrics/record-info?taskId=…` with `response.data[]` of `{ title, text }`.
 *
 * The upstream documents `callBackUrl` as required; the adapter sends the configured one (with
 * the task's reference as `reference` query parameter) and polls regardless. There is no
 * idempotency key and no search by reference, so `lookup` is left out.
 */
import { Effect, Schema } from "effect"
import type { Catalog, Provider } from "@taskmeter/kernel"
import * as Envelope from "../market/Envelope.ts"
import * as Outputs from "../utils/Outputs.ts"
import * as ProviderConfig from "../utils/ProviderConfig.ts"
import * as UpstreamError from "../utils/UpstreamError.ts"

export const DEFAULT_BASE_URL = "https://api.kie.ai"

export interface SongModel {
  readonly kind: "music" | "lyrics"
  /** The request body for one of our inputs, without `callBackUrl`. */
  readonly request: (input: Catalog.ModelInput) => { readonly [field: string]: unknown }
}

export interface Options extends ProviderConfig.AdapterOptions {
  readonly provider: string
  readonly models: { readonly [slug: string]: SongModel }
  readonly callBackUrl?: string | undefined
}

const Created = Schema.Struct({ taskId: Schema.String.check(Schema.isMinLength(1)) })

const Track = Schema.Struct({
  id: Schema.optional(Schema.NullOr(Schema.String)),
  audioUrl: Schema.optional(Schema.NullOr(Schema.String)),
  title: Schema.optional(Schema.NullOr(Schema.String)),
  tags: Schema.optional(Schema.NullOr(Schema.String)),
  duration: Schema.optional(Schema.NullOr(Schema.Number))
})

const MusicRecord = Schema.Struct({
  status: Schema.Literals([
    "PENDING",
    "TEXT_SUCCESS",
    "FIRST_SUCCESS",
    "SUCCESS",
    "CREATE_TASK_FAILED",
    "GENERATE_AUDIO_FAILED",
    "CALLBACK_EXCEPTION",
    "SENSITIVE_WORD_ERROR"
  ]),
  response: Schema.optional(Schema.NullOr(Schema.Struct({ sunoData: Schema.optional(Schema.NullOr(Schema.Array(Track))) }))),
  errorMessage: Schema.optional(Schema.NullOr(Schema.String))
})

const Lyric = Schema.Struct({
  text: Schema.optional(Schema.NullOr(Schema.String)),
  title: Schema.optional(Schema.NullOr(Schema.String)),
  status: Schema.optional(Schema.NullOr(Schema.String))
})

const LyricsRecord = Schema.Struct({
  status: Schema.Literals([
    "PENDING",
    "SUCCESS",
    "CREATE_TASK_FAILED",
    "GENERATE_LYRICS_FAILED",
    "CALLBACK_EXCEPTION",
    "SENSITIVE_WORD_ERROR"
  ]),
  response: Schema.optional(Schema.NullOr(Schema.Struct({ data: Schema.optional(Schema.NullOr(Schema.Array(Lyric))) }))),
  errorMessage: Schema.optional(Schema.NullOr(Schema.String))
})

const MUSIC_PROGRESS = { PENDING: 0, TEXT_SUCCESS: 0.3, FIRST_SUCCESS: 0.6 } as const

const failed = (status: string, message: string | null | undefined): Provider.PollResult => ({
  _tag: "Failed",
  errorCode: status === "SENSITIVE_WORD_ERROR" ? UpstreamError.ErrorCodes.ContentRejected : UpstreamError.ErrorCodes.GenerationFailed,
  message: `${status}${message ? `: ${message}` : ""}`
})

const music = (record: typeof MusicRecord.Type): Provider.PollResult => {
  const tracks = (record.response?.sunoData ?? []).filter((track) => typeof track.audioUrl === "string" && track.audioUrl !== "")
  switch (record.status) {
    case "PENDING":
    case "TEXT_SUCCESS":
    case "FIRST_SUCCESS":
      return { _tag: "Pending", progress: MUSIC_PROGRESS[record.status] }
    // The callback to us failed, not the music: the tracks are there when the job finished.
    case "CALLBACK_EXCEPTION":
    case "SUCCESS":
      if (tracks.length > 0) {
        return {
          _tag: "Succeeded",
          outputs: tracks.map((track) =>
            Outputs.fromUrl("audio", track.audioUrl!, {
              metadata: {
                ...(track.id ? { trackId: track.id } : {}),
                ...(track.title ? { title: track.title } : {}),
                ...(track.tags ? { tags: track.tags } : {}),
                ...(typeof track.duration === "number" ? { durationSeconds: track.duration } : {})
              }
            })
          )
        }
      }
      return record.status === "SUCCESS"
        ? { _tag: "Failed", errorCode: UpstreamError.ErrorCodes.NoOutput, message: "the job succeeded without tracks" }
        : failed(record.status, record.errorMessage)
    default:
      return failed(record.status, record.errorMessage)
  }
}

const lyrics = (record: typeof LyricsRecord.Type): Provider.PollResult => {
  switch (record.status) {
    case "PENDING":
      return { _tag: "Pending", progress: 0 }
    case "CALLBACK_EXCEPTION":
    case "SUCCESS": {
      const first = (record.response?.data ?? []).find((lyric) => typeof lyric.text === "string" && lyric.text.trim() !== "")
      if (first !== undefined) {
        const title = first.title?.trim()
        return {
          _tag: "Succeeded",
          outputs: [Outputs.text(title ? `${title}\n\n${first.text!.trim()}\n` : `${first.text!.trim()}\n`, title ? { title } : undefined)]
        }
      }
      return record.status === "SUCCESS"
        ? { _tag: "Failed", errorCode: UpstreamError.ErrorCodes.NoOutput, message: "the job succeeded without lyrics" }
        : failed(record.status, record.errorMessage)
    }
    default:
      return failed(record.status, record.errorMessage)
  }
}

export const make = (options: Options): Provider.ProviderV1 => {
  const { baseUrl, apiKey, http, maxConcurrency } = ProviderConfig.resolve(options, DEFAULT_BASE_URL)
  const headers = { authorization: `Bearer ${apiKey}` }
  const modelOf = (slug: string) =>
    Object.hasOwn(options.models, slug)
      ? Effect.succeed(options.models[slug]!)
      : Effect.fail(UpstreamError.unsupportedModel(options.provider, slug))
  const path = (entry: SongModel) => entry.kind === "music" ? "/api/v1/generate" : "/api/v1/lyrics"

  const callBackUrl = (reference: string) => {
    if (options.callBackUrl === undefined) return {}
    const url = new URL(options.callBackUrl)
    url.searchParams.set("reference", reference)
    return { callBackUrl: url.href }
  }

  const submit: Provider.ProviderV1["submit"] = ({ model, input, reference }) =>
    Effect.gen(function*() {
      const entry = yield* modelOf(model)
      const reply = yield* http.send("submit", {
        method: "POST",
        url: `${baseUrl}${path(entry)}`,
        headers,
        json: { ...entry.request(input), ...callBackUrl(reference) }
      })
      const created = yield* Envelope.decode(Created, reply, "submit", `${entry.kind} submit`)
      return { _tag: "Accepted" as const, upstreamId: created.taskId }
    })

  const poll: Provider.ProviderV1["poll"] = ({ model, upstreamId }) =>
    Effect.gen(function*() {
      const entry = yield* modelOf(model)
      const url = new URL(`${baseUrl}${path(entry)}/record-info`)
      url.searchParams.set("taskId", upstreamId)
      const reply = yield* http.send("poll", { method: "GET", url: url.href, headers })
      return entry.kind === "music"
        ? music(yield* Envelope.decode(MusicRecord, reply, "poll", "music record-info"))
        : lyrics(yield* Envelope.decode(LyricsRecord, reply, "poll", "lyrics record-info"))
    })

  return {
    specificationVersion: "v1",
    provider: options.provider,
    models: Object.keys(options.models),
    maxConcurrency,
    submit,
    poll
  }
}
