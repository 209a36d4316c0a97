/**
 * The taskmeter HTTP API definition: every /api/v1 endpoint except chat (ChatApi, served raw), with its schemas,
 * credentials and error responses. It holds no server code, so clients import it (and `api/*`) to
 * build an `HttpApiClient`; the server implements it in `handlers/*`, and the OpenAPI document is
 * generated from it (OpenApiDocument).
 */
import { HttpApi, OpenApi } from "effect/http-api"
import { AuthApi } from "./api/AuthApi.ts"
import { CatalogApi } from "./api/CatalogApi.ts"
import { ErrorBoundary } from "./api/ErrorBoundary.ts"
import { JobsApi } from "./api/JobsApi.ts"
import { KeysApi } from "./api/KeysApi.ts"
import { MediaApi } from "./api/MediaApi.ts"
import { AgentCodesApi } from "./api/AgentCodesApi.ts"
import { PasskeysApi } from "./api/PasskeysApi.ts"
import { ResultsApi } from "./api/ResultsApi.ts"
import { API_KEY_HEADER, API_KEY_SCHEME } from "./api/Security.ts"
import { UsageApi } from "./api/UsageApi.ts"
import { WebhooksApi } from "./api/WebhooksApi.ts"

export { AuthApi } from "./api/AuthApi.ts"
export { BillingApi } from "./api/BillingApi.ts"
export { CatalogApi, type ModelInfo } from "./api/CatalogApi.ts"
export { ChatApi } from "./api/ChatApi.ts"
export type { ChatCompletionChunk, ChatRequestView, ChatStreamError } from "./api/ChatWire.ts"
export { JobsApi } from "./api/JobsApi.ts"
export { KeysApi } from "./api/KeysApi.ts"
export { MediaApi } from "./api/MediaApi.ts"
export { AgentCodesApi } from "./api/AgentCodesApi.ts"
export { PasskeysApi } from "./api/PasskeysApi.ts"
export { ResultsApi } from "./api/ResultsApi.ts"
export { type LedgerEntry, UsageApi } from "./api/UsageApi.ts"
export { type WebhookDelivery, WebhooksApi } from "./api/WebhooksApi.ts"

/** The version of the interface description, which the spec fixes at 1.0.0. */
export const VERSION = "1.0.0"

type Json = Record<string, any>

const ERROR_BODY_REF = "#/components/schemas/ErrorBody"

const retryAfter = {
  description: "Seconds to wait before retrying.",
  schema: { type: "integer", minimum: 0 }
}

/**
 * Document-wide edits the schema generator cannot express: the `x-api-key` scheme (read by the
 * Bearer middleware itself, see Security), one ErrorBody reference per status where several
 * codes share it, and Retry-After on 429 responses.
 */
const finishDocument = (spec: Json): Json => {
  for (const pathItem of Object.values<Json>(spec.paths)) {
    for (const operation of Object.values<Json>(pathItem)) {
      for (const [status, response] of Object.entries<Json>(operation.responses ?? {})) {
        const media = response.content?.["application/json"]
        const anyOf: Array<Json> | undefined = media?.schema?.anyOf
        if (anyOf !== undefined && anyOf.every((schema) => schema.$ref === ERROR_BODY_REF)) {
          media.schema = { $ref: ERROR_BODY_REF }
        }
        if (status === "429") {
          response.headers = { ...response.headers, "retry-after": retryAfter }
        }
      }
    }
  }
  spec.components.securitySchemes[API_KEY_SCHEME] = {
    type: "apiKey",
    in: "header",
    name: API_KEY_HEADER,
    description: "The same API key sent as `x-api-key: <key>`, as an alternative to the Bearer header."
  }
  return spec
}

export const Api = HttpApi.make("taskmeter")
  .add(CatalogApi, JobsApi, MediaApi, ResultsApi, UsageApi, AuthApi, PasskeysApi, AgentCodesApi, KeysApi, WebhooksApi)
  .middleware(ErrorBoundary)
  .annotateMerge(
    OpenApi.annotations({
      title: "taskmeter API",
      version: VERSION,
      description:
        "Run hosted image, video, audio and text models as asynchronous tasks paid from prepaid credits. " +
        "Submit a task, poll it every 4 to 5 seconds until it is terminal, then download its assets. " +
        "Amounts are integer USD micro-units (1 USD = 1000000). Every error has the body `{ code, error }`; clients branch on `code`.",
      transform: finishDocument
    })
  )
export type Api = typeof Api
