/**
 * Tasks (jobs): submit, list, poll, follow (server-sent events), cancel, read their webhook deliveries.
 *
 * The documented request body of POST /api/v1/jobs here is the envelope every model shares; the
 * served OpenAPI document replaces it with the union of every model's body, discriminated by
 * `model`, each carrying that model's input JSON Schema from the Catalog (see OpenApiDocument).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Errors, Task, TaskStatus, WebhookEvent } from "@taskmeter/kernel"
import * as PreferWait from "../PreferWait.ts"
import { parameterSchemas } from "./OpenApiParameters.ts"
import { Authentication, PresentedKey, requireScope } from "./Security.ts"
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, PageSize } from "./UsageApi.ts"
import { WebhookDeliveryList } from "./WebhooksApi.ts"

export const IDEMPOTENCY_KEY_HEADER = "idempotency-key"

/** 1 to 128 printable ASCII characters (space to tilde). */
export const IdempotencyKey = Schema.String.check(
  Schema.isPattern(/^[\x20-\x7e]{1,128}$/u, {
    message: "must be 1 to 128 printable ASCII characters"
  })
).annotate({
  description: "1 to 128 printable ASCII characters. A retry with the same key and the same body never charges twice."
})

export const ExpectedPriceMicros = Schema.Int.check(
  Schema.isGreaterThanOrEqualTo(0, { message: "must be a non-negative integer (USD micro-units)" })
).annotate({
  description:
    "The price shown to the user, in USD micro-units. A different current price gives 409 PRICE_CHANGED before anything is reserved."
})

/** The component name of the request envelope, replaced per model in the served document. */
export const JOB_REQUEST_IDENTIFIER = "JobRequest"

/** The body of POST /api/v1/jobs, as the server checks it before the model's own validation. */
export const JobRequest = Schema.Struct({
  model: Schema.String.annotate({ description: "A model slug from GET /api/v1/models." }),
  input: Schema.Record(Schema.String, Schema.Unknown).annotate({
    description: "The model's input fields; see the model's input schema."
  }),
  expectedPriceMicros: Schema.optionalKey(ExpectedPriceMicros),
  webhookUrl: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "A public https URL that receives this task's events, signed (Standard Webhooks) with the account's secret " +
        "from GET /api/v1/webhook-signing-secret."
    })
  ),
  webhookEvents: Schema.optionalKey(
    Schema.Array(WebhookEvent.TaskEventType)
      .check(Schema.isMinLength(1, { message: "must name at least one event" }))
      .annotate({
        description:
          "Only these task events go to webhookUrl; task.succeeded, task.failed and task.reconciliation_required " +
          "when absent (task.running only when named)."
      })
  )
}).annotate({ identifier: JOB_REQUEST_IDENTIFIER })
export type JobRequest = typeof JobRequest.Type

export const TaskList = Schema.Struct({
  data: Schema.Array(Task.Task).annotate({
    description: "The caller's tasks, newest first: the latest 100 unless limit, before or a filter says otherwise."
  }),
  nextCursor: Schema.NullOr(Schema.String).annotate({
    description: "Pass as `before` for the next (older) page; null at the end."
  })
}).annotate({ identifier: "TaskList" })
export type TaskList = typeof TaskList.Type

const instantRule = "must be an ISO 8601 date-time, e.g. 2030-01-01T00:00:00Z"

/** An ISO 8601 date-time with its zone, as `createdAt` shows them. */
export const Instant = Schema.String.check(
  Schema.makeFilter(
    (text: string) =>
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/u.test(text) && !Number.isNaN(Date.parse(text)),
    { message: instantRule }
  )
).annotate({ format: "date-time" })

/** GET /api/v1/jobs: page and filters; each documented by the schema it is decoded with. */
const listQuery = {
  limit: Schema.optionalKey(PageSize),
  before: Schema.optionalKey(Schema.String.annotate({ description: "The nextCursor of the previous page." })),
  status: Schema.optionalKey(TaskStatus.TaskStatus.annotate({ description: "Only tasks in this status." })),
  model: Schema.optionalKey(Schema.String.annotate({ description: "Only tasks of this model slug." })),
  createdAfter: Schema.optionalKey(Instant.annotate({ description: "Only tasks created strictly after this instant." })),
  createdBefore: Schema.optionalKey(Instant.annotate({ description: "Only tasks created strictly before this instant." }))
}

/** The events of GET /api/v1/jobs/{id}/events (EventStream), as the OpenAPI document shows them. */
const TaskEventSchema = Schema.Union([
  Schema.Struct({
    id: Schema.String.annotate({ description: "The status's sequence, for Last-Event-ID." }),
    event: Schema.Literal("status"),
    data: Schema.fromJsonString(
      Schema.Struct({ id: Schema.String, status: TaskStatus.TaskStatus }).annotate({ identifier: "TaskStatusEvent" })
    )
  }),
  Schema.Struct({
    id: Schema.String.annotate({ description: "The terminal status's sequence." }),
    event: Schema.Literal("task"),
    data: Schema.fromJsonString(Task.Task)
  })
])

const lastEventIdParameter = {
  name: "Last-Event-ID",
  in: "header",
  required: false,
  description: "The id of the last event received: the stream resumes after it. Another value starts from the beginning.",
  schema: { type: "string", examples: ["3"] }
} as const

const withLastEventId = (operation: Record<string, any>): Record<string, any> => ({
  ...operation,
  parameters: [...(operation.parameters ?? []), lastEventIdParameter]
})

const submitDocumentation = (operation: Record<string, any>) => {
  const responses = operation.responses
  return parameterSchemas({ [IDEMPOTENCY_KEY_HEADER]: IdempotencyKey })({
    ...PreferWait.documented(operation),
    responses: {
      ...responses,
      "202": { ...responses["202"], description: "A new task was accepted and its price reserved (replayed: false)." },
      "200": {
        ...responses["200"],
        description:
          "Idempotent replay: the same Idempotency-Key and body matched an earlier submission (replayed: true); nothing new is reserved."
      }
    }
  })
}

export const JobsApi = HttpApiGroup.make("jobs")
  .add(
    HttpApiEndpoint.post("create", "/api/v1/jobs", {
      headers: { [IDEMPOTENCY_KEY_HEADER]: IdempotencyKey },
      payload: JobRequest,
      success: [Task.SubmittedTask.pipe(HttpApiSchema.status(202)), Task.SubmittedTask.pipe(HttpApiSchema.status(200))],
      error: [
        Errors.InvalidRequest,
        Errors.InvalidIdempotencyKey,
        Errors.InvalidModelInput,
        Errors.MediaExpired,
        Errors.InputTooLarge,
        Errors.ModelNotFound,
        Errors.IdempotencyConflict,
        Errors.PriceChanged,
        Errors.ModelPriceUnavailable,
        Errors.PaymentReviewRequired,
        Errors.InsufficientCredits,
        Errors.ApiKeyUsageExceeded,
        Errors.RateLimited,
        Errors.ConcurrencyLimited,
        Errors.ExecutionUnavailable,
        Errors.PlatformBudgetExceeded,
        Errors.ExecutionTemporarilyUnavailable,
        Errors.ApiUnavailable
      ]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Submit a task",
          description:
            "Validates the input, fixes the price and reserves it from the prepaid balance. " +
            "The body is at most 256 KB: upload media first (POST /api/v1/media) and send the reference."
        })
      )
      .annotateMerge(requireScope("jobs:create", submitDocumentation))
      // The kernel authenticates the key within the admission (one store call): see handlers/PresentedKey.
      .middleware(PresentedKey),
    HttpApiEndpoint.get("list", "/api/v1/jobs", {
      query: listQuery,
      success: TaskList,
      error: [Errors.InvalidRequest, Errors.JobNotFound, Errors.ApiUnavailable]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "List tasks",
          description:
            "The latest 100 tasks, newest first, or a page of `limit` (1 to 100) of them; follow `nextCursor` with `before` " +
            "for older ones, without gaps or repeats while new tasks arrive. Filters narrow the list by status, model and " +
            "creation time. An invalid parameter is INVALID_REQUEST; a cursor that names no task of the account is JOB_NOT_FOUND."
        })
      )
      .annotateMerge(
        requireScope(
          "jobs:read",
          parameterSchemas(
            { limit: PageSize, createdAfter: Instant, createdBefore: Instant },
            {
              limit: { default: DEFAULT_PAGE_SIZE, description: `Tasks per page, 1 to ${MAX_PAGE_SIZE}.` },
              createdAfter: { format: "date-time", description: "Only tasks created strictly after this instant (ISO 8601)." },
              createdBefore: { format: "date-time", description: "Only tasks created strictly before this instant (ISO 8601)." }
            }
          )
        )
      )
      .middleware(Authentication),
    HttpApiEndpoint.get("get", "/api/v1/jobs/:id", {
      params: { id: Schema.String.annotate({ description: "The task id returned at submission (task_<uuid>)." }) },
      success: Task.Task,
      error: [Errors.InvalidRequest, Errors.JobNotFound, Errors.ApiUnavailable]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Poll a task",
          description:
            "Poll every 4 to 5 seconds until the status is terminal (succeeded, failed or reconciliation_required), " +
            "or send `Prefer: wait=N` to be answered as soon as it is. A task of another account is JOB_NOT_FOUND."
        })
      )
      .annotateMerge(requireScope("jobs:read", PreferWait.documented))
      .middleware(Authentication),
    HttpApiEndpoint.get("events", "/api/v1/jobs/:id/events", {
      params: { id: Schema.String.annotate({ description: "The task id returned at submission (task_<uuid>)." }) },
      success: [
        HttpApiSchema.StreamSse({ contentType: "text/event-stream", events: TaskEventSchema }),
        HttpApiSchema.NoContent.annotate({
          description: "The Last-Event-ID is the final event's: the stream has nothing more (an EventSource stops here)."
        })
      ],
      error: [Errors.JobNotFound, Errors.ConcurrencyLimited, Errors.ApiUnavailable]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Follow a task's status (server-sent events)",
          description:
            "A text/event-stream: `event: status` with data `{ id, status }` each time the task's status changes, then " +
            "`event: task` with the whole task (as GET /api/v1/jobs/{id}) when it is terminal, and the stream ends; a " +
            "terminal task gives the final event at once. Each event's `id` is the status's sequence (queued 1, submitting 2, " +
            "running 3, reconciliation_required 4, succeeded and failed 5): reconnect with `Last-Event-ID` for only the later " +
            "ones. A comment line (`: heartbeat`) comes every 15 seconds. An account may have 100 streams open at once (on all " +
            "the service's processes together, SSE_MAX_STREAMS_PER_ACCOUNT); past that CONCURRENCY_LIMITED. A task of another account is JOB_NOT_FOUND."
        })
      )
      .annotateMerge(requireScope("jobs:read", withLastEventId))
      .middleware(Authentication),
    HttpApiEndpoint.get("webhookDeliveries", "/api/v1/jobs/:id/webhook-deliveries", {
      params: { id: Schema.String.annotate({ description: "The task id returned at submission (task_<uuid>)." }) },
      query: {
        limit: Schema.optionalKey(PageSize),
        before: Schema.optionalKey(Schema.String.annotate({ description: "The nextCursor of the previous page." }))
      },
      success: WebhookDeliveryList,
      error: [Errors.InvalidRequest, Errors.JobNotFound, Errors.ApiUnavailable]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "A task's webhook deliveries",
          description:
            "Every delivery about the task, newest first with every attempt: to the submission's own webhookUrl " +
            "(endpointId null) and to the account's webhook endpoints (their endpointId). Deliveries finished longer " +
            "than WEBHOOK_LOG_RETENTION ago (30 days) are gone. A task of another account is JOB_NOT_FOUND."
        })
      )
      .annotateMerge(
        requireScope(
          "jobs:read",
          parameterSchemas(
            { limit: PageSize },
            { limit: { default: DEFAULT_PAGE_SIZE, description: "Deliveries per page, 1 to 100." } }
          )
        )
      )
      .middleware(Authentication),
    HttpApiEndpoint.post("cancel", "/api/v1/jobs/:id/cancel", {
      params: { id: Schema.String.annotate({ description: "The task id returned at submission (task_<uuid>)." }) },
      success: [Task.Task.pipe(HttpApiSchema.status(200)), Task.Task.pipe(HttpApiSchema.status(202))],
      error: [Errors.JobNotFound, Errors.TaskNotCancelable, Errors.ApiUnavailable]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Cancel a task",
          description:
            "A queued task, or one not yet accepted upstream, ends failed with errorCode CANCELED and its reservation released (200). " +
            "A running task is canceled upstream where the provider can (202: poll it); if the upstream confirms, it ends failed " +
            "CANCELED and released; if it finished anyway, it settles as it finished. Repeating a cancel answers the same; " +
            "a task that finished otherwise is 409 TASK_NOT_CANCELABLE."
        })
      )
      .annotateMerge(requireScope("jobs:create"))
      .middleware(Authentication)
  )
  .annotate(OpenApi.Description, "Submit, list, poll, follow and cancel tasks.")
