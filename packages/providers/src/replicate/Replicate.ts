/**
 * The base adapter for Replicate's predictions API (replicate.com/docs/reference/http): `POST
 * {base}/v1/models/{owner}/{name}/predictions` with `{ input }` (with `preferWaitSeconds`, `Prefer:
 * wait=N`, so a fast model answers Completed at once), `GET {base}/v1/predictions/{id}` until
 * succeeded, failed, canceled or aborted, and `POST .../cancel`. Authorization is `Bearer <token>`.
 * No idempotency key and no search by client reference, so no `lookup`: our per-task callback URL
 * goes as `webhook` (completed events only), and the webhook's prediction `id` names the job.
 */
import { Effect, Schema } from "effect"
import type { Catalog, Provider, Task } from "@taskmeter/kernel"
import * as CallbackBody from "../utils/CallbackBody.ts"
import * as JsonBody from "../utils/JsonBody.ts"
import * as Outputs from "../utils/Outputs.ts"
import * as ProviderConfig from "../utils/ProviderConfig.ts"
import * as TableAdapter from "../utils/TableAdapter.ts"
import * as UpstreamError from "../utils/UpstreamError.ts"

export const DEFAULT_BASE_URL = "https://api.replicate.com"

export interface ReplicateModel {
  readonly output: Task.AssetType
  /** The model (`owner/name`, its latest version runs) and its input for one of our inputs. */
  readonly request: (input: Catalog.ModelInput) => { readonly model: string; readonly input: object }
}

export interface Options extends TableAdapter.Options<ReplicateModel> {
  /** Seconds (1 to 60) the upstream may hold the submit open for a fast result; off by default. */
  readonly preferWaitSeconds?: number | undefined
}

const Prediction = Schema.Struct({
  id: Schema.String.check(Schema.isMinLength(1)),
  status: Schema.Literals(["starting", "processing", "succeeded", "failed", "canceled", "aborted"]),
  output: Schema.optional(Schema.NullOr(Schema.Union([Schema.String, Schema.Array(Schema.String)]))),
  error: Schema.optional(Schema.NullOr(Schema.Unknown))
})
type Prediction = typeof Prediction.Type

const urlsOf = (output: Prediction["output"]): ReadonlyArray<string> =>
  output === undefined || output === null ? [] : typeof output === "string" ? [output] : output

const settled = (entry: ReplicateModel, prediction: Prediction): Provider.PollResult => {
  switch (prediction.status) {
    case "starting":
      return { _tag: "Pending", progress: 0 }
    case "processing":
      return { _tag: "Pending" }
    case "succeeded":
      return Outputs.delivered(
        urlsOf(prediction.output).map((url) => Outputs.fromUrl(entry.output, url)),
        "the prediction succeeded without output"
      )
    case "failed":
      return {
        _tag: "Failed",
        errorCode: UpstreamError.ErrorCodes.GenerationFailed,
        message: typeof prediction.error === "string" ? prediction.error : "the prediction failed"
      }
    case "canceled":
    case "aborted":
      return { _tag: "Failed", errorCode: UpstreamError.ErrorCodes.Canceled, message: `the prediction was ${prediction.status}` }
  }
}

export const make = (options: Options): Provider.ProviderV1 => {
  const { baseUrl, apiKey, http } = ProviderConfig.resolve(options, DEFAULT_BASE_URL)
  const headers = { authorization: `Bearer ${apiKey}` }
  const predictionUrl = (id: string) => `${baseUrl}/v1/predictions/${encodeURIComponent(id)}`

  return TableAdapter.make(options, {
    submit: (entry, { callbackUrl, input }) =>
      Effect.gen(function* () {
        const request = entry.request(input)
        const reply = yield* http.send("submit", {
          method: "POST",
          url: `${baseUrl}/v1/models/${request.model}/predictions`,
          headers:
            options.preferWaitSeconds === undefined ? headers : { ...headers, prefer: `wait=${options.preferWaitSeconds}` },
          json: {
            input: request.input,
            ...(callbackUrl === undefined ? {} : { webhook: callbackUrl, webhook_events_filter: ["completed"] })
          }
        })
        const prediction = yield* JsonBody.decode(Prediction, reply, "submit", "prediction")
        const result = settled(entry, prediction)
        return result._tag === "Succeeded"
          ? { _tag: "Completed" as const, upstreamId: prediction.id, outputs: result.outputs }
          : { _tag: "Accepted" as const, upstreamId: prediction.id }
      }),
    poll: (entry, { upstreamId }) =>
      Effect.gen(function* () {
        const reply = yield* http.send("poll", { method: "GET", url: predictionUrl(upstreamId), headers })
        return settled(entry, yield* JsonBody.decode(Prediction, reply, "poll", "prediction"))
      }),
    callback: (_entry, { body }) => Effect.succeed(CallbackBody.stringAt(body, "id")),
    cancel: (_entry, { upstreamId }) =>
      Effect.gen(function* () {
        const reply = yield* http.send("poll", { method: "POST", url: `${predictionUrl(upstreamId)}/cancel`, headers })
        yield* JsonBody.expectOk(reply)
      })
  })
}
