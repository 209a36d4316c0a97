/**
 * The base adapter for task-market APIs (kie.ai's "Market" API, docs.kie.ai/market): `POST
 * {base}/api/v1/jobs/createTask` with `{ model, input, callBackUrl? }`, then `GET
 * {base}/api/v1/jobs/recordInfo?taskId=…` until `state` is success or fail (`resultJson` holds the
 * result URLs). The calls and envelope are `TaskCalls`; no search by reference, so no `lookup`: the
 * callback (`{ code, data: { taskId } }`) names the job. A
 * family (alpha, gamma, delta) gives only its table: per slug, the output type and input mapping.
 */
import { Effect, Result, Schema } from "effect"
import type { Catalog, Provider, Task } from "@taskmeter/kernel"
import * as CallbackBody from "../utils/CallbackBody.ts"
import * as JobHandle from "../utils/JobHandle.ts"
import * as Outputs from "../utils/Outputs.ts"
import * as TableAdapter from "../utils/TableAdapter.ts"
import * as UpstreamError from "../utils/UpstreamError.ts"
import * as TaskCalls from "./TaskCalls.ts"

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

export interface Options extends TableAdapter.Options<MarketModel>, TaskCalls.Options {}

const Record = Schema.Struct({
  taskId: Schema.optional(Schema.String),
  state: Schema.Literals(["waiting", "queuing", "generating", "success", "fail"]),
  resultJson: Schema.optional(Schema.NullOr(Schema.String)),
  failCode: Schema.optional(Schema.NullOr(Schema.Union([Schema.String, Schema.Number]))),
  failMsg: Schema.optional(Schema.NullOr(Schema.String))
})

const ResultJson = Schema.Struct({ resultUrls: Schema.Array(Schema.String) })

const PENDING_PROGRESS = { waiting: 0, queuing: 0.1, generating: 0.5 } as const

const outputsOf = (entry: MarketModel, resultJson: string | null | undefined, keep: number | undefined) => {
  const parsed = Result.try(() => JSON.parse(resultJson ?? "") as unknown)
  const result = Result.isSuccess(parsed) ? Schema.decodeUnknownResult(ResultJson)(parsed.success) : parsed
  if (Result.isFailure(result)) {
    return Effect.fail(
      UpstreamError.terminal(
        UpstreamError.ErrorCodes.MalformedResult,
        `the finished job's resultJson is not { resultUrls: [...] }: ${String(resultJson).slice(0, 200)}`
      )
    )
  }
  const urls = result.success.resultUrls.slice(0, keep ?? Infinity)
  return Effect.succeed(
    Outputs.delivered(
      urls.map((url) => Outputs.fromUrl(entry.output, url)),
      "the job succeeded without result URLs"
    )
  )
}

/** The job's handle: its id, and how many results to keep when the model returns a fixed batch. */
const handleOf = (entry: MarketModel, taskId: string, input: Catalog.ModelInput) => {
  const keep = entry.maxOutputs?.(input)
  return JobHandle.encode(taskId, keep === undefined ? {} : { keep })
}

export const make = (options: Options): Provider.ProviderV1 => {
  const tasks = TaskCalls.make(options, DEFAULT_BASE_URL)
  return TableAdapter.make(options, {
    submit: (entry, request) =>
      Effect.gen(function* () {
        const job = entry.request(request.input)
        const taskId = yield* tasks.create(
          "/api/v1/jobs/createTask",
          { model: job.model, input: job.input },
          request,
          "createTask"
        )
        return { _tag: "Accepted" as const, upstreamId: handleOf(entry, taskId, request.input) }
      }),
    callback: (entry, { body, input }) => {
      const taskId = CallbackBody.stringAt(body, "data", "taskId")
      return Effect.succeed(taskId === undefined ? undefined : handleOf(entry, taskId, input))
    },
    poll: (entry, { upstreamId }) =>
      Effect.gen(function* () {
        const handle = JobHandle.decode(upstreamId)
        const record = yield* tasks.record("/api/v1/jobs/recordInfo", handle.id, Record, "recordInfo")
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
  })
}
