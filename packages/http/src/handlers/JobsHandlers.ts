/**
 * POST /api/v1/jobs, GET /api/v1/jobs, GET /api/v1/jobs/{id}, GET /api/v1/jobs/{id}/events
 * (EventStream), GET /api/v1/jobs/{id}/webhook-deliveries (WebhookEndpoints, once the task is
 * found the account's) and POST /api/v1/jobs/{id}/cancel, over the kernel's TaskRunner.
 *
 * Submission reads its body itself (JsonBody: 256 KB, counted while it streams), checks the
 * envelope with the API's JobRequest schema (INVALID_REQUEST naming each problem), and leaves
 * the key and the model's input to the TaskRunner (authentication within the admission, see
 * PresentedKey; Catalog validation, price, admission). A body that fails answers the key's refusal first.
 */
import { Clock, Effect, Schema, SchemaIssue } from "effect"
import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import type { HttpApiEndpoint } from "effect/http-api"
import { Accounts, Errors, Ids, ProblemList, TaskRunner, TaskView, WebhookEndpoints } from "@taskmeter/kernel"
import type { TaskStore } from "@taskmeter/kernel"
import { Api } from "../Api.ts"
import { DEFAULT_PAGE_SIZE } from "../api/UsageApi.ts"
import { IDEMPOTENCY_KEY_HEADER, JobRequest } from "../api/JobsApi.ts"
import { CurrentCaller, CurrentKey } from "../api/Security.ts"
import * as EventStream from "../EventStream.ts"
import * as JsonBody from "../JsonBody.ts"
import * as PreferWait from "../PreferWait.ts"
import { insufficientScope } from "./Authentication.ts"
import * as PresentedKey from "./PresentedKey.ts"
import { toApiUnavailable } from "./StoreFailures.ts"
import { deliveryView } from "./WebhooksHandlers.ts"

const requestFields = Object.keys(JobRequest.fields).join(", ")

const formatRequestIssues = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (leaf) =>
    leaf._tag === "MissingKey"
      ? "is required"
      : leaf._tag === "UnexpectedKey"
        ? `is not a field of the request (its fields: ${requestFields})`
        : SchemaIssue.defaultLeafHook(leaf)
})

/** The time a task is shown at (its retention, TaskView). */
const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

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

/** The submission's own webhook, its URL judged by the outbound address policy; undefined when none was asked for. */
const webhookOf = Effect.fnUntraced(function* (job: JobRequest) {
  if (job.webhookUrl === undefined) {
    if (job.webhookEvents === undefined) return undefined
    return yield* new Errors.InvalidRequest({ message: "webhookEvents: needs a webhookUrl to send the events to." })
  }
  const refusal = yield* WebhookEndpoints.urlRefusal("webhookUrl", job.webhookUrl)
  if (refusal !== undefined) return yield* new Errors.InvalidRequest({ message: refusal })
  return { url: job.webhookUrl, events: job.webhookEvents ?? null }
})

const appliedHeaders = (applied: number | undefined): Record<string, string> =>
  applied === undefined ? {} : { [PreferWait.APPLIED_HEADER]: `wait=${applied}` }

/** The submission a request carries: its job, the wait it prefers and its webhook. */
const submissionOf = Effect.fnUntraced(function* (request: HttpServerRequest.HttpServerRequest) {
  const keyHeaders = countOf(request, IDEMPOTENCY_KEY_HEADER)
  if (keyHeaders > 1) return yield* repeatedIdempotencyKey(keyHeaders)
  const wait = yield* PreferWait.parse(request.headers[PreferWait.HEADER])
  const job = yield* decodeRequest(yield* JsonBody.read(request))
  return { job, wait, webhook: yield* webhookOf(job) }
})

const malformedId = (id: string) =>
  new Errors.JobNotFound({
    message: `No task has the id ${JSON.stringify(id)}; task ids look like task_<uuid>, as POST /api/v1/jobs returns them.`
  })

export const layer = HttpApiBuilder.group(Api, "jobs", (handlers) =>
  Effect.gen(function* () {
    const accounts = yield* Accounts.Accounts
    const runner = yield* TaskRunner.TaskRunner
    const webhooks = yield* WebhookEndpoints.WebhookEndpoints
    const { heartbeatMs } = yield* EventStream.Settings
    const draining = yield* EventStream.Draining

    /** The task after the wait the caller prefers, and the seconds applied (undefined: none). */
    const awaited = (task: TaskStore.TaskRecord, wait: number | undefined) =>
      wait === undefined
        ? Effect.succeed({ task, applied: undefined })
        : Effect.map(runner.awaitTask(task, wait * 1000), (result) => ({
            task: result.task,
            applied: result.waited ? wait : undefined
          }))
    const create = Effect.fnUntraced(function* (
      endpoint: HttpApiEndpoint.Top,
      idempotencyKey: string,
      request: HttpServerRequest.HttpServerRequest
    ) {
      const key = yield* CurrentKey
      const { job, wait, webhook } = yield* submissionOf(request).pipe(
        Effect.catch(PresentedKey.keyFirst(accounts, key, endpoint))
      )
      const { replayed, task } = yield* runner.submit(key, {
        model: job.model,
        input: job.input,
        expectedPriceMicros: job.expectedPriceMicros,
        idempotencyKey,
        webhook
      })
      const status = replayed ? 200 : 202
      // The task is admitted: a store outage while waiting answers it as it stood, not an error.
      const waited = yield* awaited(task, wait).pipe(Effect.orElseSucceed(() => ({ task, applied: undefined })))
      return HttpServerResponse.jsonUnsafe(TaskView.submitted(waited.task, replayed, yield* now), {
        status,
        headers: appliedHeaders(waited.applied)
      })
    })

    const get = Effect.fnUntraced(function* (id: string, request: HttpServerRequest.HttpServerRequest) {
      const caller = yield* CurrentCaller
      const wait = yield* PreferWait.parse(request.headers[PreferWait.HEADER])
      if (!Ids.isTaskId(id)) return yield* malformedId(id)
      const { task, applied } = yield* awaited(yield* runner.get(caller, id), wait)
      return HttpServerResponse.jsonUnsafe(TaskView.task(task, yield* now), { headers: appliedHeaders(applied) })
    })

    return handlers
      .handleRaw("create", ({ endpoint, headers, request }) =>
        create(endpoint, headers["idempotency-key"], request).pipe(
          // The kernel's refusal does not name the endpoint; Authentication's, which clients know, does.
          Effect.catchTag("InsufficientScope", () => Effect.fail(insufficientScope("jobs:create", endpoint)))
        )
      )
      .handle("list", ({ query }) =>
        Effect.gen(function* () {
          const caller = yield* CurrentCaller
          const { createdAfter, createdBefore, ...rest } = query
          const page = yield* runner.list(caller, {
            ...rest,
            createdAfter: createdAfter === undefined ? undefined : new Date(createdAfter),
            createdBefore: createdBefore === undefined ? undefined : new Date(createdBefore)
          })
          const at = yield* now
          return { data: page.tasks.map((task) => TaskView.task(task, at)), nextCursor: page.nextCursor }
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handleRaw("get", ({ params, request }) =>
        get(params.id, request).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handleRaw("events", ({ params, request }) =>
        Effect.gen(function* () {
          const caller = yield* CurrentCaller
          if (!Ids.isTaskId(params.id)) return yield* malformedId(params.id)
          const task = yield* runner.get(caller, params.id)
          const after = EventStream.lastSeen(request.headers[EventStream.LAST_EVENT_ID_HEADER])
          if (EventStream.finished(task, after)) return HttpServerResponse.empty({ status: 204 })
          // The slot is held by the request's scope, which lasts as long as the stream.
          const events = yield* runner.follow(task, after)
          return HttpServerResponse.stream(EventStream.encode(events, { heartbeatMs, draining }), {
            contentType: EventStream.CONTENT_TYPE,
            // Tells nginx-style proxies not to buffer the stream.
            headers: { "x-accel-buffering": "no" }
          })
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("webhookDeliveries", ({ params, query }) =>
        Effect.gen(function* () {
          const caller = yield* CurrentCaller
          if (!Ids.isTaskId(params.id)) return yield* malformedId(params.id)
          const task = yield* runner.get(caller, params.id)
          const page = yield* webhooks.taskDeliveries(caller.accountId, task.id, {
            limit: query.limit ?? DEFAULT_PAGE_SIZE,
            before: query.before
          })
          return { data: page.deliveries.map(deliveryView), nextCursor: page.nextCursor }
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handleRaw("cancel", ({ params }) =>
        Effect.gen(function* () {
          const caller = yield* CurrentCaller
          if (!Ids.isTaskId(params.id)) return yield* malformedId(params.id)
          const { task, pending } = yield* runner.cancel(caller, params.id)
          return HttpServerResponse.jsonUnsafe(TaskView.task(task, yield* now), { status: pending ? 202 : 200 })
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
  })
)
