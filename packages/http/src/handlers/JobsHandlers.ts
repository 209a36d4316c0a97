/**
 * POST /api/v1/jobs, GET /api/v1/jobs, GET /api/v1/jobs/{id} and POST /api/v1/jobs/{id}/cancel,
 * over the kernel's TaskRunner.
 *
 * Submission reads its body itself (JsonBody: 256 KB, counted while it streams), checks the
 * envelope with the API's JobRequest schema (INVALID_REQUEST naming each problem), and leaves
 * the key and the model's input to the TaskRunner (authentication within the admission, see
 * PresentedKey; Catalog validation, price, admission). A body that fails answers the key's refusal first.
 */
import { Effect, Schema, SchemaIssue } from "effect"
import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Accounts, Errors, Ids, ProblemList, TaskRunner, TaskView } from "@taskmeter/kernel"
import { Api } from "../Api.ts"
import { IDEMPOTENCY_KEY_HEADER, JobRequest } from "../api/JobsApi.ts"
import { CurrentCaller, CurrentKey } from "../api/Security.ts"
import * as JsonBody from "../JsonBody.ts"
import { insufficientScope } from "./Authentication.ts"
import * as PresentedKey from "./PresentedKey.ts"
import { toApiUnavailable } from "./StoreFailures.ts"

const requestFields = Object.keys(JobRequest.fields).join(", ")

const formatRequestIssues = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (leaf) =>
    leaf._tag === "MissingKey"
      ? "is required"
      : leaf._tag === "UnexpectedKey"
        ? `is not a field of the request (its fields: ${requestFields})`
        : SchemaIssue.defaultLeafHook(leaf)
})

const isObject = (u: unknown): u is object => typeof u === "object" && u !== null && !Array.isArray(u)

const decodeRequest = (body: unknown): Effect.Effect<JobRequest, Errors.InvalidRequest> => {
  if (!isObject(body)) {
    return Effect.fail(
      new Errors.InvalidRequest({
        message: "The body must be a JSON object with model and input (and optionally expectedPriceMicros)."
      })
    )
  }
  return Schema.decodeUnknownEffect(JobRequest)(body, { errors: "all", onExcessProperty: "error" }).pipe(
    Effect.mapError(
      (error) =>
        new Errors.InvalidRequest({
          message: ProblemList.join(
            formatRequestIssues(error.issue).issues.map(
              ({ message, path = [] }) => `${path.map((s) => String(typeof s === "object" ? s.key : s)).join(".")}: ${message}`
            )
          )
        })
    )
  )
}

/**
 * How many times the request carries header `name` (lower case), from the platform's raw header
 * list; 1 when the platform gives none. Node joins repeated unknown headers with ", " into one
 * value, so two Idempotency-Key headers would otherwise read as one valid key that is neither.
 */
const countOf = (request: HttpServerRequest.HttpServerRequest, name: string): number => {
  const raw = (request.source as { readonly rawHeaders?: unknown }).rawHeaders
  if (!Array.isArray(raw)) return 1
  let count = 0
  for (let i = 0; i < raw.length; i += 2) if (String(raw[i]).toLowerCase() === name) count++
  return count
}

const repeatedIdempotencyKey = (count: number) =>
  new Errors.InvalidIdempotencyKey({
    message: `Send one Idempotency-Key header, not ${count}: which one names this submission is ambiguous.`
  })

const malformedId = (id: string) =>
  new Errors.JobNotFound({
    message: `No task has the id ${JSON.stringify(id)}; task ids look like task_<uuid>, as POST /api/v1/jobs returns them.`
  })

export const layer = HttpApiBuilder.group(Api, "jobs", (handlers) =>
  Effect.gen(function* () {
    const accounts = yield* Accounts.Accounts
    const runner = yield* TaskRunner.TaskRunner
    return handlers
      .handleRaw("create", ({ endpoint, headers, request }) =>
        Effect.gen(function* () {
          const key = yield* CurrentKey
          const job = yield* Effect.gen(function* () {
            const keyHeaders = countOf(request, IDEMPOTENCY_KEY_HEADER)
            if (keyHeaders > 1) return yield* repeatedIdempotencyKey(keyHeaders)
            return yield* decodeRequest(yield* JsonBody.read(request))
          }).pipe(Effect.catch(PresentedKey.keyFirst(accounts, key, endpoint)))
          const { replayed, task } = yield* runner.submit(TaskRunner.presentedKey(key), {
            model: job.model,
            input: job.input,
            expectedPriceMicros: job.expectedPriceMicros,
            idempotencyKey: headers["idempotency-key"]
          })
          return HttpServerResponse.jsonUnsafe(TaskView.submitted(task, replayed), { status: replayed ? 200 : 202 })
        }).pipe(
          // The kernel's refusal does not name the endpoint; Authentication's, which clients know, does.
          Effect.catchTag("InsufficientScope", () => Effect.fail(insufficientScope("jobs:create", endpoint)))
        )
      )
      .handle("list", () =>
        Effect.gen(function* () {
          const caller = yield* CurrentCaller
          const tasks = yield* runner.list(caller)
          return { data: tasks.map(TaskView.task) }
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("get", ({ params }) =>
        Effect.gen(function* () {
          const caller = yield* CurrentCaller
          if (!Ids.isTaskId(params.id)) return yield* malformedId(params.id)
          return TaskView.task(yield* runner.get(caller, params.id))
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handleRaw("cancel", ({ params }) =>
        Effect.gen(function* () {
          const caller = yield* CurrentCaller
          if (!Ids.isTaskId(params.id)) return yield* malformedId(params.id)
          const { task, pending } = yield* runner.cancel(caller, params.id)
          return HttpServerResponse.jsonUnsafe(TaskView.task(task), { status: pending ? 202 : 200 })
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
  })
)
