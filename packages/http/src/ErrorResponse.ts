/**
 * The one place an HTTP error response is made: the spec's body `{ code, error }` with the error's
 * status, `Retry-After` on every 429 (and a 503 that says when) and `x-should-retry: false` on errors
 * a retry cannot fix (which the OpenAI SDKs honour), for the API and the routes beside
 * it (`fromError`, `fromCause`). Nothing reaches a client as a 500: decoding failures and paths that
 * are not valid percent-encoded UTF-8 are INVALID_REQUEST (or INVALID_IDEMPOTENCY_KEY), unknown routes
 * 404 NOT_FOUND, StoreRefused INVALID_REQUEST, an unreachable store or other defect 503, logged.
 */
import { Cause, Effect, SchemaIssue } from "effect"
import { HttpServerError, HttpServerResponse } from "effect/http"
import { HttpApiError } from "effect/http-api"
import { Errors, ProblemList, StoreError } from "@taskmeter/kernel"
import { IDEMPOTENCY_KEY_HEADER } from "./api/JobsApi.ts"

/** Retry-After for a 429 whose error does not say when: about one polling interval. */
export const DEFAULT_RETRY_AFTER_SECONDS = 5

const retryAfterOf = (error: Errors.ApiError): number | undefined => {
  if (error.retryAfterSeconds !== undefined) return Math.max(0, Math.ceil(error.retryAfterSeconds))
  return error.status === 429 ? DEFAULT_RETRY_AFTER_SECONDS : undefined
}

/** Whether the same request may succeed later: a transient fault (5xx) or a limit that time lifts. */
const retryable = (error: Errors.ApiError): boolean =>
  error.status >= 500 || (error.status === 429 && error._tag !== "ApiKeyUsageExceeded")

/**
 * The response for an API error. `status` overrides the error's own status only where HTTP
 * itself requires another (416 for an unsatisfiable Range).
 */
export const fromError = (
  error: Errors.ApiError,
  options?: { readonly status?: number; readonly headers?: Record<string, string> }
): HttpServerResponse.HttpServerResponse => {
  const retryAfter = retryAfterOf(error)
  return HttpServerResponse.jsonUnsafe(Errors.errorBody(error), {
    status: options?.status ?? error.status,
    headers: {
      ...(retryAfter === undefined ? {} : { "retry-after": String(retryAfter) }),
      ...(retryable(error) ? {} : { "x-should-retry": "false" }),
      // The rest of a body refused for its size is not read; closing spares reading it to keep the connection.
      ...(error._tag === "InputTooLarge" ? { connection: "close" } : {}),
      ...options?.headers
    }
  })
}

const slotNames: { readonly [K in HttpApiError.HttpApiSchemaError["kind"]]: string } = {
  Params: "path parameter",
  Query: "query parameter",
  Headers: "header",
  Payload: "body",
  Body: "response body",
  ResponseHeaders: "response header"
}

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

const describeSchemaError = (error: HttpApiError.HttpApiSchemaError): string =>
  ProblemList.join(
    formatIssues(error.cause.issue).issues.map(({ message, path = [] }) => {
      const name = path.map((segment) => String(typeof segment === "object" ? segment.key : segment)).join(".")
      return name === "" ? `${slotNames[error.kind]}: ${message}` : `${slotNames[error.kind]} ${name}: ${message}`
    })
  )

const concernsIdempotencyKey = (error: HttpApiError.HttpApiSchemaError): boolean =>
  error.kind === "Headers" &&
  formatIssues(error.cause.issue).issues.some(({ path = [] }) =>
    path.some((segment) => String(typeof segment === "object" ? segment.key : segment) === IDEMPOTENCY_KEY_HEADER)
  )

/** What a request decoding failure tells the caller; undefined for the server's own encoding failures. */
export const fromSchemaError = (error: HttpApiError.HttpApiSchemaError): Errors.ApiError | undefined => {
  if (error.kind === "Body" || error.kind === "ResponseHeaders") return undefined
  if (concernsIdempotencyKey(error)) {
    return new Errors.InvalidIdempotencyKey({
      message:
        "Send an Idempotency-Key header of 1 to 128 printable ASCII characters, the same for every retry of one submission."
    })
  }
  return new Errors.InvalidRequest({ message: `Invalid ${describeSchemaError(error)}.` })
}

const unavailable = new Errors.ApiUnavailable({
  message: "The API is temporarily unavailable; retry shortly."
})

/** The store refused the request's data and would again: the caller must change it, not retry. */
const storeRefused = (refusal: StoreError.StoreRefused) =>
  new Errors.InvalidRequest({
    message: `The request's data could not be stored: ${refusal.message}; change the data and send it again.`
  })

const isRouteNotFound = (u: unknown): u is HttpServerError.HttpServerError =>
  u instanceof HttpServerError.HttpServerError && u.reason._tag === "RouteNotFound"

/** The code of a request to a route that does not exist (not one of the spec's, which has none for it). */
export const ROUTE_NOT_FOUND_CODE = "NOT_FOUND"

/** Whether `path` is valid percent-encoding of UTF-8 text (every `%` two hex digits, the bytes UTF-8). */
const isDecodable = (path: string): boolean => {
  try {
    decodeURIComponent(path)
    return true
  } catch {
    return false
  }
}

/**
 * 404 `{ code: "NOT_FOUND", error }` naming the method and path (without the query) asked for;
 * but 400 INVALID_REQUEST for a path that is not valid percent-encoded UTF-8 (`%`, `%E0%A4%A`, an
 * encoded lone surrogate `%ED%A0%80`), which the router matches to no route: that is a malformed
 * URL on every route, not an id or route that does not exist, and the client must fix its encoding.
 */
export const routeNotFound = (method: string, url: string): HttpServerResponse.HttpServerResponse => {
  const path = url.split("?")[0]!
  if (!isDecodable(path)) {
    return HttpServerResponse.jsonUnsafe(
      Errors.errorBody(
        new Errors.InvalidRequest({
          message:
            `The path ${JSON.stringify(path)} is not valid percent-encoded UTF-8: write a literal % as %25 and ` +
            "percent-encode the UTF-8 bytes of other characters (ids go in the path as the API returns them)."
        })
      ),
      { status: 400 }
    )
  }
  return HttpServerResponse.jsonUnsafe(
    {
      code: ROUTE_NOT_FOUND_CODE,
      error: `No endpoint ${method} ${path}; the API is described at /api/openapi.json.`
    },
    { status: 404 }
  )
}

/** The API error a failure or defect stands for, if it is one the caller can act on. */
const classify = (u: unknown): Errors.ApiError | undefined => {
  if (Errors.isApiError(u)) return u
  if (HttpApiError.HttpApiSchemaError.is(u)) return fromSchemaError(u)
  return undefined
}

/**
 * The response for any cause: API errors as they are, decoding failures as INVALID_REQUEST,
 * an unknown route as 404 NOT_FOUND, anything else as API_UNAVAILABLE after logging it. An interruption (the client went away) stays
 * an interruption. Defects are classified too: the HttpApi builder turns a decoding failure that
 * no endpoint middleware handled into one.
 */
export const fromCause = (cause: Cause.Cause<unknown>): Effect.Effect<HttpServerResponse.HttpServerResponse, never> => {
  if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
  for (const reason of cause.reasons) {
    const value = Cause.isFailReason(reason) ? reason.error : Cause.isDieReason(reason) ? reason.defect : undefined
    if (isRouteNotFound(value)) return Effect.succeed(routeNotFound(value.request.method, value.request.url))
    const apiError = classify(value)
    if (apiError !== undefined) return Effect.succeed(fromError(apiError))
    if (value instanceof StoreError.StoreUnavailable) {
      return Effect.as(Effect.logWarning("A store is unavailable", cause), fromError(unavailable))
    }
    if (StoreError.isStoreRefused(value)) {
      return Effect.as(Effect.logError("A store refused a request's data", cause), fromError(storeRefused(value)))
    }
  }
  return Effect.as(Effect.logError("Request failed unexpectedly", cause), fromError(unavailable))
}
