/**
 * The base adapter for task-market APIs: one endpoint creates a job for any of the market's
 * models, one reports on it (kie.ai's "Market" API, documented at docs.kie.ai/market):
 *
 * - `POST {base}/api/v1/jobs/createTask` with `{ model, input, callBackUrl? }`, answering
 *   `{ code, msg, data: { taskId } }`;
 * - `GET {base}/api/v1/jobs/recordInfo?taskId=…`, answering `{ code, msg, data: { state,
 *   resultJson, failCode, failMsg, … } }` where `state` is waiting, queuing, generating,
 *   success or fail, and `resultJson` is a JSON string `{ resultUrls: [...] }`.
 *
 * Authorization is `Bearer <key>`. The protocol has no idempotency key and no search by client
 * reference, so `lookup` is left out (a task lost between sending and recording goes to
 * reconciliation). When a `callBackUrl` is configured, the task's reference rides along as its
 * `reference` query parameter, which the market echoes in recordInfo's `param`: an operator can
 * match a job to its task by hand.
 *
 * A family (alpha, gamma, delta) gives only its table: per slug, the output type and how an
 * input becomes the market's `{ model, input }`.
 */
import { Effect, Result, Schema } from "effect"
import type { Catalog, Provider, Task } from "@taskmeter/kernel"
import * as JobHandle from "../utils/JobHandle.ts"
import * as Outputs from "../utils/Outputs.ts"
import * as ProviderConfig from "../utils/ProviderConfig.ts"
import * as UpstreamError from "../utils/UpstreamError.ts"
import * as Envelope from "./Envelope.ts"

export const DEFAULT_BASE_URL = "https://api.kie.ai"

export interface MarketRequest {
  /** The market's model id, e.g. "nano-banana-pro". */
  readonly model: string
  readonly input: { readonly [field: string]: unknown }
}

export interface MarketModel {
  readonly output: Task.AssetType
  readonly request: (input: Catalog.ModelInput) => MarketRequest
  /** Most results delivered (e.g. numImages) when the upstream may return more; all otherwise. */
  readonly maxOutputs?: ((input: Catalog.ModelInput) => number) | undefined
}

export interface Options extends ProviderConfig.AdapterOptions {
  readonly provider: string
  readonly models: { readonly [slug: string]: MarketModel }
  /** An https endpoint of ours for completion callbacks; the adapter polls either way. */
  readonly callBackUrl?: string | undefined
}

const Created = Schema.Struct({ taskId: Schema.String.check(Schema.isMinLength(1)) })

const Record = Schema.Struct({
  taskId: Schema.optional(Schema.String),
  state: Schema.Literals(["waiting", "queuing", "generating", "success", "fail"]),
  resultJson: Schema.optional(Schema.NullOr(Schema.String)),
  failCode: Schema.optional(Schema.NullOr(Schema.Union([Schema.String, Schema.Number]))),
  failMsg: Schema.optional(Schema.NullOr(Schema.String))
})

const ResultJson = Schema.Struct({ resultUrls: Schema.Array(Schema.String) })

const PENDING_PROGRESS = { waiting: 0, queuing: 0.1, generating: 0.5 } as const

export const make = (options: Options): Provider.ProviderV1 => {
  const { baseUrl, apiKey, http, maxConcurrency } = ProviderConfig.resolve(options, DEFAULT_BASE_URL)
  const headers = { authorization: `Bearer ${apiKey}` }
  const modelOf = (slug: string) =>
    Object.hasOwn(options.models, slug)
      ? Effect.succeed(options.models[slug]!)
      : Effect.fail(UpstreamError.unsupportedModel(options.provider, slug))

  const callBackUrl = (reference: string) => {
    if (options.callBackUrl === undefined) return {}
    const url = new URL(options.callBackUrl)
    url.searchParams.set("reference", reference)
    return { callBackUrl: url.href }
  }

  const submit: Provider.ProviderV1["submit"] = ({ model, input, reference }) =>
    Effect.gen(function*() {
      const entry = yield* modelOf(model)
      const request = entry.request(input)
      const reply = yield* http.send("submit", {
        method: "POST",
        url: `${baseUrl}/api/v1/jobs/createTask`,
        headers,
        json: { model: request.model, ...callBackUrl(reference), input: request.input }
      })
      const created = yield* Envelope.decode(Created, reply, "submit", "createTask")
      const keep = entry.maxOutputs?.(input)
      return { _tag: "Accepted" as const, upstreamId: JobHandle.encode(created.taskId, keep === undefined ? {} : { keep }) }
    })

  const outputsOf = (entry: MarketModel, resultJson: string | null | undefined, keep: number | undefined) => {
    const parsed = Result.try(() => JSON.parse(resultJson ?? "") as unknown)
    const result = Result.isSuccess(parsed) ? Schema.decodeUnknownResult(ResultJson)(parsed.success) : parsed
    if (Result.isFailure(result)) {
      return Effect.fail(UpstreamError.terminal(
        UpstreamError.ErrorCodes.MalformedResult,
        `the finished job's resultJson is not { resultUrls: [...] }: ${String(resultJson).slice(0, 200)}`
      ))
    }
    const urls = result.success.resultUrls.slice(0, keep ?? Infinity)
    return Effect.succeed<Provider.PollResult>(
      urls.length === 0
        ? { _tag: "Failed", errorCode: UpstreamError.ErrorCodes.NoOutput, message: "the job succeeded without result URLs" }
        : { _tag: "Succeeded", outputs: urls.map((url) => Outputs.fromUrl(entry.output, url)) }
    )
  }

  const poll: Provider.ProviderV1["poll"] = ({ model, upstreamId }) =>
    Effect.gen(function*() {
      const entry = yield* modelOf(model)
      const handle = JobHandle.decode(upstreamId)
      const url = new URL(`${baseUrl}/api/v1/jobs/recordInfo`)
      url.searchParams.set("taskId", handle.id)
      const reply = yield* http.send("poll", { method: "GET", url: url.href, headers })
      const record = yield* Envelope.decode(Record, reply, "poll", "recordInfo")
      switch (record.state) {
        case "success":
          return yield* outputsOf(entry, record.resultJson, handle.keep)
        case "fail":
          return {
            _tag: "Failed" as const,
            errorCode: UpstreamError.ErrorCodes.GenerationFailed,
            message: `${record.failMsg ?? "the job failed"}${record.failCode ? ` (failCode ${record.failCode})` : ""}`
          }
        default:
          return { _tag: "Pending" as const, progress: PENDING_PROGRESS[record.state] }
      }
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
