/**
 * The music API the song family runs on (the Suno API as kie.ai serves it, docs.kie.ai/suno-api),
 * in the task market's `{ code, msg, data }` envelope: music through `POST {base}/api/v1/generate`
 * and `GET .../generate/record-info?taskId=…` (two tracks per job), lyrics through
 * `POST {base}/api/v1/lyrics` and `GET .../lyrics/record-info`. `callBackUrl` is the task's own
 * callback URL, else as configured (`TaskCalls`), and polled regardless; no search by reference,
 * so no `lookup`: the callback (`{ code, data: { task_id } }`) names the job.
 */
import { Effect, Schema } from "effect"
import type { Catalog, Provider } from "@taskmeter/kernel"
import * as TaskCalls from "../market/TaskCalls.ts"
import * as CallbackBody from "../utils/CallbackBody.ts"
import * as Outputs from "../utils/Outputs.ts"
import * as TableAdapter from "../utils/TableAdapter.ts"
import * as UpstreamError from "../utils/UpstreamError.ts"

export const DEFAULT_BASE_URL = "https://api.kie.ai"

export interface SongModel {
  readonly kind: "music" | "lyrics"
  /** The request body for one of our inputs, without `callBackUrl`. */
  readonly request: (input: Catalog.ModelInput) => { readonly [field: string]: unknown }
}

export interface Options extends TableAdapter.Options<SongModel>, TaskCalls.Options {}

/**
 * A job record of either kind: its status (the kind's own, and the failures both share), the
 * kind's `response` and the upstream's explanation of a failure.
 */
const recordOf = <const Statuses extends ReadonlyArray<string>, Body extends Schema.Top>(statuses: Statuses, body: Body) =>
  Schema.Struct({
    status: Schema.Literals([...statuses, "CREATE_TASK_FAILED", "CALLBACK_EXCEPTION", "SENSITIVE_WORD_ERROR"]),
    response: Schema.optional(Schema.NullOr(body)),
    errorMessage: Schema.optional(Schema.NullOr(Schema.String))
  })

const Track = Schema.Struct({
  id: Schema.optional(Schema.NullOr(Schema.String)),
  audioUrl: Schema.optional(Schema.NullOr(Schema.String)),
  title: Schema.optional(Schema.NullOr(Schema.String)),
  tags: Schema.optional(Schema.NullOr(Schema.String)),
  duration: Schema.optional(Schema.NullOr(Schema.Number))
})

const MusicRecord = recordOf(
  ["PENDING", "TEXT_SUCCESS", "FIRST_SUCCESS", "SUCCESS", "GENERATE_AUDIO_FAILED"],
  Schema.Struct({ sunoData: Schema.optional(Schema.NullOr(Schema.Array(Track))) })
)

const Lyric = Schema.Struct({
  text: Schema.optional(Schema.NullOr(Schema.String)),
  title: Schema.optional(Schema.NullOr(Schema.String)),
  status: Schema.optional(Schema.NullOr(Schema.String))
})

const LyricsRecord = recordOf(
  ["PENDING", "SUCCESS", "GENERATE_LYRICS_FAILED"],
  Schema.Struct({ data: Schema.optional(Schema.NullOr(Schema.Array(Lyric))) })
)

const MUSIC_PROGRESS = { PENDING: 0, TEXT_SUCCESS: 0.3, FIRST_SUCCESS: 0.6 } as const

const failed = (status: string, message: string | null | undefined): Provider.PollResult => ({
  _tag: "Failed",
  errorCode:
    status === "SENSITIVE_WORD_ERROR" ? UpstreamError.ErrorCodes.ContentRejected : UpstreamError.ErrorCodes.GenerationFailed,
  message: `${status}${message ? `: ${message}` : ""}`
})

/**
 * A record whose job is done. CALLBACK_EXCEPTION means the callback to us failed, not the job:
 * the results are there when the job finished, and it is the failure it reports otherwise.
 */
const finished = (
  status: "SUCCESS" | "CALLBACK_EXCEPTION",
  errorMessage: string | null | undefined,
  outputs: ReadonlyArray<Provider.ProviderOutput>,
  what: string
): Provider.PollResult =>
  outputs.length === 0 && status === "CALLBACK_EXCEPTION"
    ? failed(status, errorMessage)
    : Outputs.delivered(outputs, `the job succeeded without ${what}`)

const music = (record: typeof MusicRecord.Type): Provider.PollResult => {
  switch (record.status) {
    case "PENDING":
    case "TEXT_SUCCESS":
    case "FIRST_SUCCESS":
      return { _tag: "Pending", progress: MUSIC_PROGRESS[record.status] }
    case "CALLBACK_EXCEPTION":
    case "SUCCESS": {
      const tracks = (record.response?.sunoData ?? []).filter(
        (track) => typeof track.audioUrl === "string" && track.audioUrl !== ""
      )
      const outputs = tracks.map((track) =>
        Outputs.fromUrl("audio", track.audioUrl!, {
          metadata: {
            ...(track.id ? { trackId: track.id } : {}),
            ...(track.title ? { title: track.title } : {}),
            ...(track.tags ? { tags: track.tags } : {}),
            ...(typeof track.duration === "number" ? { durationSeconds: track.duration } : {})
          }
        })
      )
      return finished(record.status, record.errorMessage, outputs, "tracks")
    }
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
      const title = first?.title?.trim()
      const outputs =
        first === undefined
          ? []
          : [
              Outputs.text(
                title ? `${title}\n\n${first.text!.trim()}\n` : `${first.text!.trim()}\n`,
                title ? { title } : undefined
              )
            ]
      return finished(record.status, record.errorMessage, outputs, "lyrics")
    }
    default:
      return failed(record.status, record.errorMessage)
  }
}

const path = (entry: SongModel) => (entry.kind === "music" ? "/api/v1/generate" : "/api/v1/lyrics")

export const make = (options: Options): Provider.ProviderV1 => {
  const tasks = TaskCalls.make(options, DEFAULT_BASE_URL)
  return TableAdapter.make(options, {
    submit: (entry, request) =>
      Effect.map(tasks.create(path(entry), entry.request(request.input), request, `${entry.kind} submit`), (upstreamId) => ({
        _tag: "Accepted" as const,
        upstreamId
      })),
    callback: (_entry, { body }) =>
      Effect.succeed(CallbackBody.stringAt(body, "data", "task_id") ?? CallbackBody.stringAt(body, "data", "taskId")),
    poll: (entry, { upstreamId }) =>
      entry.kind === "music"
        ? Effect.map(tasks.record(`${path(entry)}/record-info`, upstreamId, MusicRecord, "music record-info"), music)
        : Effect.map(tasks.record(`${path(entry)}/record-info`, upstreamId, LyricsRecord, "lyrics record-info"), lyrics)
  })
}
