/**
 * The OpenAPI 3.1 document served at GET /api/openapi.json, generated from the API definition, with
 * POST /api/v1/jobs made exact for the catalog in force (one request schema per model, inline in
 * the request body, its `model` a const and its `input` the Catalog's JSON Schema), the chat
 * endpoints and their stream events (from ChatApi and the chat wire schemas), the webhook events
 * as the document's `webhooks` (one POST per event type, its body and signature headers), and the two
 * signed-link routes: media links as internal (`x-internal: true`), result links under the results
 * tag; provider callbacks as internal too; and the health routes (observability/Health).
 *
 * Made for generated clients (openapi-typescript and @hey-api/openapi-ts at their defaults): the
 * per-model bodies are inline because openapi-typescript makes a property with a `default`
 * required everywhere but in a request body; an object schema that lists no members is marked
 * open (`additionalProperties: true`), which generators otherwise read as an empty object; and
 * `servers` names the public base URL (a relative "/" without one).
 */
import { JsonSchema, Schema } from "effect"
import { OpenApi } from "effect/http-api"
import { WebhookEvent } from "@taskmeter/kernel"
import type { Catalog } from "@taskmeter/kernel"
import { Api } from "./Api.ts"
import { BillingApi } from "./api/BillingApi.ts"
import { ChatApi } from "./api/ChatApi.ts"
import * as ChatWire from "./api/ChatWire.ts"
import { JOB_REQUEST_IDENTIFIER } from "./api/JobsApi.ts"
import { uploadContentTypes } from "./api/MediaApi.ts"
import * as WebhookBodies from "./api/WebhookBodies.ts"
import * as CallbackHandlers from "./handlers/CallbackHandlers.ts"
import * as MediaLinksHandlers from "./handlers/MediaLinksHandlers.ts"
import * as Health from "./observability/Health.ts"
import * as ResultLinksHandlers from "./handlers/ResultLinksHandlers.ts"

type Json = Record<string, any>

const JOBS_PATH = "/api/v1/jobs"
const RESULTS_PATH = "/api/v1/results/{id}"
const MEDIA_LINKS_TAG = "media-links"
const RESULTS_TAG = "results"
const ERROR_BODY = { "application/json": { schema: { $ref: "#/components/schemas/ErrorBody" } } }

const requestOf = (model: Catalog.ModelDefinition, envelope: Json): Json => ({
  type: "object",
  title: model.title,
  description: model.description,
  properties: {
    model: { type: "string", const: model.slug },
    input: structuredClone(model.jsonSchema),
    expectedPriceMicros: envelope.properties.expectedPriceMicros,
    webhookUrl: envelope.properties.webhookUrl,
    webhookEvents: envelope.properties.webhookEvents
  },
  required: ["model", "input"],
  additionalProperties: false
})

/** Keywords whose values are data, not schemas: never rewritten. */
const DATA_KEYWORDS = new Set(["const", "default", "enum", "example", "examples"])

/** Marks every object schema under `node` that lists no members as open (`additionalProperties: true`). */
const openBareObjects = (node: unknown): void => {
  if (Array.isArray(node)) {
    for (const item of node) openBareObjects(item)
    return
  }
  if (typeof node !== "object" || node === null) return
  const schema = node as Json
  if (
    schema.type === "object" &&
    schema.properties === undefined &&
    schema.additionalProperties === undefined &&
    schema.patternProperties === undefined
  ) {
    schema.additionalProperties = true
  }
  for (const [key, value] of Object.entries(schema)) {
    if (!DATA_KEYWORDS.has(key)) openBareObjects(value)
  }
}

const queryParameter = (name: string, description: string, schema: Json = { type: "string" }): Json => ({
  name,
  in: "query",
  required: true,
  description,
  schema
})

interface SignedLink {
  readonly fields: Json
  readonly uuid: string
  readonly account: string
  readonly gone: string
  /** The 410 answered for a file past its retention, when the link can name one. */
  readonly expired?: string
  /** The file types served; the results download's when absent. */
  readonly contentTypes?: ReadonlyArray<string>
}

/** A signed-link operation, from the results download's (the same file responses, ranges and headers). */
const signedLinkOperation = (download: Json, link: SignedLink): Json => {
  const { "200": whole, "206": partial, "304": notModified, "416": unsatisfiable } = download.responses
  const files =
    link.contentTypes === undefined
      ? whole.content
      : Object.fromEntries(link.contentTypes.map((type) => [type, { schema: { type: "string", format: "binary" } }]))
  return {
    ...link.fields,
    parameters: [
      { name: "uuid", in: "path", required: true, description: link.uuid, schema: { type: "string" } },
      queryParameter("acct", link.account),
      queryParameter("exp", "Expiry, in Unix seconds.", { type: "integer", minimum: 0 }),
      queryParameter("sig", "The service's signature of the uuid, account and expiry."),
      ...download.parameters.filter((parameter: Json) => parameter.in === "header")
    ],
    security: [],
    responses: {
      "200": { ...whole, content: files },
      "206": { ...partial, content: files },
      "304": notModified,
      "404": {
        description: `JOB_NOT_FOUND: the link is unknown, altered or expired, or ${link.gone} is gone.`,
        content: ERROR_BODY
      },
      ...(link.expired === undefined ? {} : { "410": { description: link.expired, content: ERROR_BODY } }),
      "416": unsatisfiable,
      "503": { description: "API_UNAVAILABLE: The API is temporarily unavailable.", content: ERROR_BODY }
    }
  }
}

const mediaLink: SignedLink = {
  fields: {
    tags: [MEDIA_LINKS_TAG],
    operationId: "mediaLinks.fetch",
    summary: "Fetch an upload through a signed link (upstream providers only)",
    description:
      "Not for API callers. The service puts these links in the inputs it sends to upstream providers " +
      "in place of `media:<uuid>` references; they carry no API key and expire (one hour by default). " +
      "HEAD is served too.",
    "x-internal": true
  },
  uuid: "The <uuid> of the upload's `media:<uuid>`.",
  account: "The account that uploaded the file.",
  gone: "the upload",
  contentTypes: uploadContentTypes
}

const resultLink: SignedLink = {
  fields: {
    tags: [RESULTS_TAG],
    operationId: "results.downloadSigned",
    summary: "Download a result file through a signed link",
    description:
      "The bytes GET /api/v1/results/{id} serves, with no credentials: the link is the credential. " +
      "The MCP tools give one per file result (`downloadUrl`, with `downloadUrlExpiresAt`), for hosts signed in " +
      "with OAuth, which hold no API key; it names one result of one account and expires (one hour by default). " +
      "HEAD is served too."
  },
  uuid: "The <uuid> of the result, as in its asset url /api/v1/results/<uuid>.",
  account: "The account the result belongs to.",
  gone: "the result",
  expired: "RESULT_EXPIRED: the result is past its task's expiresAt (the account's retention) and its file was removed."
}

const PROVIDER_CALLBACKS_TAG = "providerCallbacks"

const pathParameter = (name: string, description: string): Json => ({
  name,
  in: "path",
  required: true,
  description,
  schema: { type: "string" }
})

const callbackOperation: Json = {
  tags: [PROVIDER_CALLBACKS_TAG],
  operationId: "providerCallbacks.notify",
  summary: "An upstream provider's notice that a job ended (upstream providers only)",
  description:
    "Not for API callers. With PROVIDER_CALLBACKS on, each task's upstream job is sent this URL; the token " +
    "is the task's signature. The body only names the upstream job, which the service then polls. Answers " +
    "200 once the task is settled (or was already), 202 while the job still runs.",
  "x-internal": true,
  security: [],
  parameters: [
    pathParameter("accountId", "The task's account."),
    pathParameter("taskId", "The task."),
    pathParameter("token", "The task's callback token (HMAC-SHA256, base64url).")
  ],
  requestBody: { required: true, content: { "application/json": { schema: {} } } },
  responses: {
    "200": { description: "The task is settled (`settled` says whether this call settled it)." },
    "202": {
      description: "The job still runs upstream (the worker keeps following it), or its results are still being copied in."
    },
    "400": { description: "INVALID_REQUEST: the body is not JSON, names no job, or another job.", content: ERROR_BODY },
    "404": { description: "JOB_NOT_FOUND: the URL is unknown or altered.", content: ERROR_BODY },
    "503": { description: "API_UNAVAILABLE: the job could not be checked now; call back later.", content: ERROR_BODY }
  }
}

/** The API with the chat and billing groups, which the server serves as raw routes. */
const Documented = Api.add(ChatApi).add(BillingApi)

/**
 * The stream events' schemas and those they refer to, as components (generated as the API's
 * are: OpenAPI 3.1 references, no undeclared members).
 */
const streamEventComponents = (): Json => {
  const { definitions, schema } = Schema.toJsonSchemaDocument(
    Schema.Union([ChatWire.ChatCompletionChunk, ChatWire.ChatStreamError]),
    {
      onExcessProperty: "error"
    }
  )
  return JsonSchema.toMultiDocumentOpenApi3_1({ dialect: "draft-2020-12", schemas: [schema], definitions }).definitions
}

/** The webhook bodies' schemas and those they refer to, as components (as `streamEventComponents`). */
const webhookComponents = (): Json => {
  const { definitions, schema } = Schema.toJsonSchemaDocument(
    Schema.Union([WebhookBodies.TaskWebhookBody, WebhookBodies.PaymentWebhookBody]),
    { onExcessProperty: "error" }
  )
  return JsonSchema.toMultiDocumentOpenApi3_1({ dialect: "draft-2020-12", schemas: [schema], definitions }).definitions
}

/** One `webhooks` entry per event type: the POST each endpoint receives. */
const webhooks = (): Json =>
  Object.fromEntries(
    WebhookEvent.eventTypes.map((type) => [
      type,
      {
        post: {
          summary: type,
          description:
            `${WebhookBodies.meanings[type]} Sent to the account's webhook endpoints that subscribe to ${type}` +
            (type.startsWith("task.") ? " and to a submission's webhookUrl whose webhookEvents allow it" : "") +
            "; retried with backoff until a 2xx answer.",
          tags: ["webhooks"],
          parameters: Object.entries(WebhookBodies.SIGNATURE_HEADERS).map(([name, description]) => ({
            name,
            in: "header",
            required: true,
            description,
            schema: { type: "string" }
          })),
          requestBody: {
            required: true,
            content: {
              "application/json": {
                schema: {
                  $ref: `#/components/schemas/${type.startsWith("task.") ? "TaskWebhookBody" : "PaymentWebhookBody"}`
                }
              }
            }
          },
          responses: { "200": { description: "Any 2xx answer delivers it; anything else is tried again." } }
        }
      }
    ])
  )

export interface Options {
  /** The public base URL the API is served at (PUBLIC_URL); the document's server is "/" without one. */
  readonly publicUrl?: string | undefined
}

/** The document for an API serving the given models. */
export const make = (models: ReadonlyArray<Catalog.ModelDefinition>, options: Options = {}): OpenApi.OpenAPISpec => {
  const spec = OpenApi.fromApi(Documented) as Json
  spec.servers = [{ url: options.publicUrl === undefined ? "/" : new URL(options.publicUrl).href.replace(/\/+$/, "") }]
  spec.components.schemas = { ...streamEventComponents(), ...webhookComponents(), ...spec.components.schemas }
  spec.webhooks = webhooks()
  const envelope: Json = spec.components.schemas[JOB_REQUEST_IDENTIFIER]
  spec.paths[JOBS_PATH].post.requestBody = {
    required: true,
    content: { "application/json": { schema: { oneOf: models.map((model) => requestOf(model, envelope)) } } }
  }
  delete spec.components.schemas[JOB_REQUEST_IDENTIFIER]
  spec.paths[MediaLinksHandlers.PATH] = { get: signedLinkOperation(spec.paths[RESULTS_PATH].get, mediaLink) }
  spec.paths[ResultLinksHandlers.PATH] = { get: signedLinkOperation(spec.paths[RESULTS_PATH].get, resultLink) }
  spec.paths[CallbackHandlers.PATH] = { post: callbackOperation }
  Object.assign(spec.paths, Health.openApiPaths)
  spec.tags = [
    ...(spec.tags ?? []),
    {
      name: MEDIA_LINKS_TAG,
      description: "Internal: where upstream providers fetch uploaded media. Not for API callers.",
      "x-internal": true
    },
    {
      name: PROVIDER_CALLBACKS_TAG,
      description: "Internal: where upstream providers report that a job ended. Not for API callers.",
      "x-internal": true
    },
    { name: "health", description: "Liveness and readiness, for supervisors and load balancers. No credentials." }
  ]
  openBareObjects(spec.paths)
  openBareObjects(spec.webhooks)
  openBareObjects(spec.components.schemas)
  return spec as OpenApi.OpenAPISpec
}
