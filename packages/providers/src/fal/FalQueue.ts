/**
 * The base adapter for fal.ai's queue API (docs.fal.ai, "Asynchronous inference"): `POST
 * {base}/{endpoint}` with the input, then `GET {base}/{owner}/{app}/requests/{id}/status` until
 * COMPLETED, the result fetched at once from `.../requests/{id}` (fal keeps it briefly), and `PUT
 * .../cancel`; each table entry names its `app`. Authorization is `Key <key>`. No idempotency key
 * and no search by client reference, so no `lookup`: our per-task callback URL goes as
 * `fal_webhook`, and the webhook's `request_id` names the job (`callback`).
 */
import { Effect, Schema } from "effect"
import type { Catalog, Provider, Task } from "@taskmeter/kernel"
import * as CallbackBody from "../utils/CallbackBody.ts"
import * as JsonBody from "../utils/JsonBody.ts"
import * as Outputs from "../utils/Outputs.ts"
import * as ProviderConfig from "../utils/ProviderConfig.ts"
import * as TableAdapter from "../utils/TableAdapter.ts"
import * as UpstreamError from "../utils/UpstreamError.ts"

export const DEFAULT_BASE_URL = "https://queue.fal.run"

export interface FalModel {
  readonly output: Task.AssetType
  /** `owner/app` of every endpoint the entry uses, for the status, result and cancel URLs. */
  readonly app: string
  /** The endpoint id (`owner/app/path`) and its input for one of our inputs. */
  readonly request: (input: Catalog.ModelInput) => { readonly endpoint: string; readonly input: object }
}

export type Options = TableAdapter.Options<FalModel>

const Submitted = Schema.Struct({ request_id: Schema.String.check(Schema.isMinLength(1)) })

const Status = Schema.Struct({
  status: Schema.Literals(["IN_QUEUE", "IN_PROGRESS", "COMPLETED"]),
  queue_position: Schema.optional(Schema.NullOr(Schema.Number)),
  error: Schema.optional(Schema.NullOr(Schema.String)),
  error_type: Schema.optional(Schema.NullOr(Schema.String))
})

const File = Schema.Struct({
  url: Schema.String,
  content_type: Schema.optional(Schema.NullOr(Schema.String)),
  file_size: Schema.optional(Schema.NullOr(Schema.Number)),
  width: Schema.optional(Schema.NullOr(Schema.Number)),
  height: Schema.optional(Schema.NullOr(Schema.Number))
})

/** The result shapes of fal's media models: one video, one audio, or a list of images. */
const Result = Schema.Struct({
  video: Schema.optional(File),
  audio: Schema.optional(File),
  image: Schema.optional(File),
  images: Schema.optional(Schema.Array(File))
})

const filesOf = (type: Task.AssetType, result: typeof Result.Type): ReadonlyArray<typeof File.Type> => {
  switch (type) {
    case "video":
      return result.video === undefined ? [] : [result.video]
    case "audio":
      return result.audio === undefined ? [] : [result.audio]
    case "image":
      return result.images ?? (result.image === undefined ? [] : [result.image])
    case "text":
      return []
  }
}

const CONTENT_ERRORS = new Set(["content_policy_violation", "nsfw_content_detected"])

export const make = (options: Options): Provider.ProviderV1 => {
  const { baseUrl, apiKey, http } = ProviderConfig.resolve(options, DEFAULT_BASE_URL)
  const headers = { authorization: `Key ${apiKey}` }
  const requestUrl = (entry: FalModel, id: string) => `${baseUrl}/${entry.app}/requests/${encodeURIComponent(id)}`

  const result = (entry: FalModel, id: string) =>
    Effect.gen(function* () {
      const reply = yield* http.send("poll", { method: "GET", url: requestUrl(entry, id), headers })
      const body = yield* JsonBody.decode(Result, reply, "poll", "queue result")
      return Outputs.delivered(
        filesOf(entry.output, body).map((file) =>
          Outputs.fromUrl(entry.output, file.url, {
            contentType: file.content_type ?? undefined,
            metadata: file.width && file.height ? { width: file.width, height: file.height } : undefined
          })
        ),
        `the request completed without a ${entry.output} result`
      )
    })

  return TableAdapter.make(options, {
    submit: (entry, { callbackUrl, input }) =>
      Effect.gen(function* () {
        const request = entry.request(input)
        const url = new URL(`${baseUrl}/${request.endpoint}`)
        if (callbackUrl !== undefined) url.searchParams.set("fal_webhook", callbackUrl)
        const reply = yield* http.send("submit", {
          method: "POST",
          url: url.href,
          headers,
          json: request.input
        })
        const submitted = yield* JsonBody.decode(Submitted, reply, "submit", "queue submit")
        return { _tag: "Accepted" as const, upstreamId: submitted.request_id }
      }),
    poll: (entry, { upstreamId }) =>
      Effect.gen(function* () {
        const reply = yield* http.send("poll", { method: "GET", url: `${requestUrl(entry, upstreamId)}/status`, headers })
        const status = yield* JsonBody.decode(Status, reply, "poll", "queue status")
        if (status.status !== "COMPLETED") {
          return { _tag: "Pending" as const, progress: status.status === "IN_QUEUE" ? 0 : undefined }
        }
        if (status.error) {
          return {
            _tag: "Failed" as const,
            errorCode:
              status.error_type && CONTENT_ERRORS.has(status.error_type)
                ? UpstreamError.ErrorCodes.ContentRejected
                : UpstreamError.ErrorCodes.GenerationFailed,
            message: status.error
          }
        }
        return yield* result(entry, upstreamId)
      }),
    callback: (_entry, { body }) => Effect.succeed(CallbackBody.stringAt(body, "request_id")),
    cancel: (entry, { upstreamId }) =>
      Effect.gen(function* () {
        const reply = yield* http.send("poll", { method: "PUT", url: `${requestUrl(entry, upstreamId)}/cancel`, headers })
        // 400 ALREADY_COMPLETED: nothing is left to cancel.
        if (reply.status === 400) return
        yield* JsonBody.expectOk(reply)
      })
  })
}
