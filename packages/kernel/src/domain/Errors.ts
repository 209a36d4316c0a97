/**
 * The error taxonomy of the service: one Schema-backed tagged error per code of the spec's
 * Errors table, carrying its `code`, HTTP status (`httpApiStatus`), a message that says what to
 * fix, and structured fields (`retryAfterSeconds`, sent as `Retry-After`; the model and amounts,
 * for callers of the kernel). Each encodes to and decodes from the spec's body `{ code, error }`.
 */
import { Effect, Schema, SchemaIssue, SchemaTransformation } from "effect"

/**
 * The spec's codes, in the order of its Errors table; TASK_NOT_CANCELABLE (task cancel),
 * MEDIA_EXPIRED and RESULT_EXPIRED (retention) are the service's own.
 */
export const codes = [
  "AUTH_REQUIRED",
  "INSUFFICIENT_SCOPE",
  "PERMISSION_DENIED",
  "API_KEY_RATE_LIMITED",
  "API_KEY_USAGE_EXCEEDED",
  "INVALID_REQUEST",
  "INVALID_IDEMPOTENCY_KEY",
  "INVALID_MODEL_INPUT",
  "MEDIA_EXPIRED",
  "INPUT_TOO_LARGE",
  "REQUEST_NOT_FOUND",
  "MODEL_NOT_FOUND",
  "JOB_NOT_FOUND",
  "RESULT_EXPIRED",
  "IDEMPOTENCY_CONFLICT",
  "PRICE_CHANGED",
  "MODEL_PRICE_UNAVAILABLE",
  "PAYMENT_REVIEW_REQUIRED",
  "INSUFFICIENT_CREDITS",
  "TASK_NOT_CANCELABLE",
  "RATE_LIMITED",
  "CONCURRENCY_LIMITED",
  "EXECUTION_UNAVAILABLE",
  "UPSTREAM_RATE_LIMITED",
  "UPSTREAM_ERROR",
  "PLATFORM_BUDGET_EXCEEDED",
  "EXECUTION_TEMPORARILY_UNAVAILABLE",
  "AUTH_UNAVAILABLE",
  "API_UNAVAILABLE",
  "CSRF_REJECTED",
  "EMAIL_TAKEN"
] as const
export type ErrorCode = (typeof codes)[number]

/** The spec's error body. Clients branch on `code`; `error` is for people. */
export const ErrorBody = Schema.Struct({
  code: Schema.Literals(codes).annotate({ description: "Stable error code; clients branch on it." }),
  error: Schema.String.annotate({ description: "What went wrong and what to fix, for people." })
}).annotate({ identifier: "ErrorBody", description: "Every error response has this body." })
export type ErrorBody = typeof ErrorBody.Type

/**
 * The fields every error has. The classes that say more are declared one by one with `onWire`:
 * a `define` generic in added fields makes the classes' members unknown to the compiler (TS2509).
 */
const baseFields = <const Tag extends string>(tag: Tag) => ({
  _tag: Schema.tag(tag),
  message: Schema.String,
  retryAfterSeconds: Schema.optionalKey(Schema.Number)
})

/**
 * The error's own schema on the wire: only `{ code, error }` is sent; the structured fields are
 * for servers to use. A body decodes to the `_tag` and `message` alone (`fromBody`), so the
 * fields a class adds are optional.
 */
const onWire = <
  S extends Schema.Struct<Schema.Struct.Fields> & Schema.Codec<{ readonly message: string }, { readonly message: string }>
>(
  code: ErrorCode,
  Type: S,
  fromBody: (message: string) => S["Encoded"]
): S["Rebuild"] =>
  Type.rebuild(
    ErrorBody.pipe(
      Schema.decodeTo(
        Type,
        SchemaTransformation.transformEffect({
          decode: (body, options) =>
            body.code === code
              ? Effect.succeed(fromBody(body.error))
              : Effect.fail(new SchemaIssue.InvalidValue({ expected: code }, body, options)),
          encode: (error) => Effect.succeed({ code, error: error.message })
        })
      )
    ).ast
  )

const define = <const Tag extends string, const Code extends ErrorCode, const Status extends number>(
  tag: Tag,
  code: Code,
  status: Status,
  condition: string
) => {
  const Type = onWire(code, Schema.Struct(baseFields(tag)), (message) => ({ _tag: tag, message }))
  return class ApiError extends Schema.Error<ApiError>(tag)(Type, {
    httpApiStatus: status,
    description: `${code}: ${condition}`
  }) {
    static readonly code: Code = code
    static readonly status: Status = status
    get code(): Code {
      return code
    }
    get status(): Status {
      return status
    }
  }
}

export class AuthRequired extends define("AuthRequired", "AUTH_REQUIRED", 401, "Missing or invalid API key.") {}
export class InsufficientScope extends define(
  "InsufficientScope",
  "INSUFFICIENT_SCOPE",
  403,
  "The key lacks the scope the endpoint needs."
) {}
export class PermissionDenied extends define(
  "PermissionDenied",
  "PERMISSION_DENIED",
  403,
  "The credential cannot perform the operation (for example, a revoked key)."
) {}
export class ApiKeyRateLimited extends define(
  "ApiKeyRateLimited",
  "API_KEY_RATE_LIMITED",
  429,
  "The key's rate limit is reached; honor the Retry-After header."
) {}
export class ApiKeyUsageExceeded extends define(
  "ApiKeyUsageExceeded",
  "API_KEY_USAGE_EXCEEDED",
  429,
  "The key reached its usage limit; a new key is needed."
) {}
export class InvalidRequest extends define(
  "InvalidRequest",
  "INVALID_REQUEST",
  400,
  "The body is not a JSON object, or a required value is missing or malformed."
) {}
export class InvalidIdempotencyKey extends define(
  "InvalidIdempotencyKey",
  "INVALID_IDEMPOTENCY_KEY",
  400,
  "Idempotency-Key is not 1 to 128 printable ASCII characters."
) {}
/** The model and the problems, at most ProblemList.MAX_LISTED of them (the message lists the same). */
export class InvalidModelInput extends Schema.Error<InvalidModelInput>("InvalidModelInput")(
  onWire(
    "INVALID_MODEL_INPUT",
    Schema.Struct({
      ...baseFields("InvalidModelInput"),
      model: Schema.optionalKey(Schema.String),
      problems: Schema.optionalKey(Schema.Array(Schema.String))
    }),
    (message) => ({ _tag: "InvalidModelInput" as const, message })
  ),
  {
    httpApiStatus: 400,
    description: "INVALID_MODEL_INPUT: input violates the model schema: unknown field, missing required field, or invalid value."
  }
) {
  static readonly code: "INVALID_MODEL_INPUT" = "INVALID_MODEL_INPUT"
  static readonly status: 400 = 400
  get code(): "INVALID_MODEL_INPUT" {
    return InvalidModelInput.code
  }
  get status(): 400 {
    return InvalidModelInput.status
  }
}
/**
 * A submission naming an upload of the account past its retention: the input is what is wrong
 * (upload the file again), so 400 like the other input errors, not 410.
 */
export class MediaExpired extends define(
  "MediaExpired",
  "MEDIA_EXPIRED",
  400,
  "An uploaded media file the input names expired under the account's retention; upload it again."
) {}
/** The spec allows 400 or 413; 413 is what HTTP clients and proxies understand as "too large". */
export class InputTooLarge extends define(
  "InputTooLarge",
  "INPUT_TOO_LARGE",
  413,
  "The request body is too large; upload media first and send a reference."
) {}
export class RequestNotFound extends define(
  "RequestNotFound",
  "REQUEST_NOT_FOUND",
  404,
  "No request with this id or cursor belongs to the account."
) {}
/** The slug asked for. */
export class ModelNotFound extends Schema.Error<ModelNotFound>("ModelNotFound")(
  onWire(
    "MODEL_NOT_FOUND",
    Schema.Struct({
      ...baseFields("ModelNotFound"),
      model: Schema.optionalKey(Schema.String)
    }),
    (message) => ({ _tag: "ModelNotFound" as const, message })
  ),
  { httpApiStatus: 404, description: "MODEL_NOT_FOUND: No model has this slug." }
) {
  static readonly code: "MODEL_NOT_FOUND" = "MODEL_NOT_FOUND"
  static readonly status: 404 = 404
  get code(): "MODEL_NOT_FOUND" {
    return ModelNotFound.code
  }
  get status(): 404 {
    return ModelNotFound.status
  }
}
export class JobNotFound extends define(
  "JobNotFound",
  "JOB_NOT_FOUND",
  404,
  "No task (or result) with this id belongs to the account."
) {}
/** A result past its account's retention: its bytes are removed (or about to be); the task keeps its record. */
export class ResultExpired extends define(
  "ResultExpired",
  "RESULT_EXPIRED",
  410,
  "The result expired under the account's retention and its file was removed."
) {}
export class IdempotencyConflict extends define(
  "IdempotencyConflict",
  "IDEMPOTENCY_CONFLICT",
  409,
  "The Idempotency-Key was already used with different input."
) {}
/** The model, the price the caller expected and the price now. */
export class PriceChanged extends Schema.Error<PriceChanged>("PriceChanged")(
  onWire(
    "PRICE_CHANGED",
    Schema.Struct({
      ...baseFields("PriceChanged"),
      model: Schema.optionalKey(Schema.String),
      expectedPriceMicros: Schema.optionalKey(Schema.Number),
      priceMicros: Schema.optionalKey(Schema.Number)
    }),
    (message) => ({ _tag: "PriceChanged" as const, message })
  ),
  { httpApiStatus: 409, description: "PRICE_CHANGED: The price differs from expectedPriceMicros." }
) {
  static readonly code: "PRICE_CHANGED" = "PRICE_CHANGED"
  static readonly status: 409 = 409
  get code(): "PRICE_CHANGED" {
    return PriceChanged.code
  }
  get status(): 409 {
    return PriceChanged.status
  }
}
/** The model without a price. */
export class ModelPriceUnavailable extends Schema.Error<ModelPriceUnavailable>("ModelPriceUnavailable")(
  onWire(
    "MODEL_PRICE_UNAVAILABLE",
    Schema.Struct({
      ...baseFields("ModelPriceUnavailable"),
      model: Schema.optionalKey(Schema.String)
    }),
    (message) => ({ _tag: "ModelPriceUnavailable" as const, message })
  ),
  { httpApiStatus: 409, description: "MODEL_PRICE_UNAVAILABLE: No price is configured for the model, or it is disabled." }
) {
  static readonly code: "MODEL_PRICE_UNAVAILABLE" = "MODEL_PRICE_UNAVAILABLE"
  static readonly status: 409 = 409
  get code(): "MODEL_PRICE_UNAVAILABLE" {
    return ModelPriceUnavailable.code
  }
  get status(): 409 {
    return ModelPriceUnavailable.status
  }
}
export class PaymentReviewRequired extends define(
  "PaymentReviewRequired",
  "PAYMENT_REVIEW_REQUIRED",
  409,
  "A refund left an uncovered balance; tasks cannot be submitted until it is covered."
) {}
/** What the task or request needs and what the account has. */
export class InsufficientCredits extends Schema.Error<InsufficientCredits>("InsufficientCredits")(
  onWire(
    "INSUFFICIENT_CREDITS",
    Schema.Struct({
      ...baseFields("InsufficientCredits"),
      requiredMicros: Schema.optionalKey(Schema.Number),
      availableMicros: Schema.optionalKey(Schema.Number)
    }),
    (message) => ({ _tag: "InsufficientCredits" as const, message })
  ),
  { httpApiStatus: 409, description: "INSUFFICIENT_CREDITS: Available credits do not cover the task price." }
) {
  static readonly code: "INSUFFICIENT_CREDITS" = "INSUFFICIENT_CREDITS"
  static readonly status: 409 = 409
  get code(): "INSUFFICIENT_CREDITS" {
    return InsufficientCredits.code
  }
  get status(): 409 {
    return InsufficientCredits.status
  }
}
export class TaskNotCancelable extends define(
  "TaskNotCancelable",
  "TASK_NOT_CANCELABLE",
  409,
  "The task already finished (or awaits reconciliation); there is nothing left to cancel."
) {}
export class RateLimited extends define(
  "RateLimited",
  "RATE_LIMITED",
  429,
  "Too many task submissions per minute; honor the Retry-After header."
) {}
export class ConcurrencyLimited extends define("ConcurrencyLimited", "CONCURRENCY_LIMITED", 429, "Too many unfinished tasks.") {}
export class ExecutionUnavailable extends define(
  "ExecutionUnavailable",
  "EXECUTION_UNAVAILABLE",
  503,
  "Execution is not configured for the model at present."
) {}
export class UpstreamRateLimited extends define(
  "UpstreamRateLimited",
  "UPSTREAM_RATE_LIMITED",
  429,
  "The model provider rate-limits requests; nothing is charged; retry with backoff."
) {}
export class UpstreamError extends define(
  "UpstreamError",
  "UPSTREAM_ERROR",
  502,
  "The model provider failed the request; nothing is charged."
) {}
/** The model whose daily budget is spent. */
export class PlatformBudgetExceeded extends Schema.Error<PlatformBudgetExceeded>("PlatformBudgetExceeded")(
  onWire(
    "PLATFORM_BUDGET_EXCEEDED",
    Schema.Struct({
      ...baseFields("PlatformBudgetExceeded"),
      model: Schema.optionalKey(Schema.String)
    }),
    (message) => ({ _tag: "PlatformBudgetExceeded" as const, message })
  ),
  { httpApiStatus: 503, description: "PLATFORM_BUDGET_EXCEEDED: The model is temporarily unavailable." }
) {
  static readonly code: "PLATFORM_BUDGET_EXCEEDED" = "PLATFORM_BUDGET_EXCEEDED"
  static readonly status: 503 = 503
  get code(): "PLATFORM_BUDGET_EXCEEDED" {
    return PlatformBudgetExceeded.code
  }
  get status(): 503 {
    return PlatformBudgetExceeded.status
  }
}
export class ExecutionTemporarilyUnavailable extends define(
  "ExecutionTemporarilyUnavailable",
  "EXECUTION_TEMPORARILY_UNAVAILABLE",
  503,
  "Retry with the same Idempotency-Key."
) {}
export class AuthUnavailable extends define(
  "AuthUnavailable",
  "AUTH_UNAVAILABLE",
  503,
  "Authentication is temporarily unavailable."
) {}
export class ApiUnavailable extends define("ApiUnavailable", "API_UNAVAILABLE", 503, "The API is temporarily unavailable.") {}

/** The service's own: an unsafe request under a session cookie without the Origin and X-CSRF-Token it needs. */
export class CsrfRejected extends define(
  "CsrfRejected",
  "CSRF_REJECTED",
  403,
  "A request under a session cookie lacks a matching Origin header or the session's X-CSRF-Token."
) {}
/** The service's own: sign-up with an email that already has a user. */
export class EmailTaken extends define("EmailTaken", "EMAIL_TAKEN", 409, "A user with this email exists already.") {}

/** Every error class, in the order of the spec's table (for OpenAPI and the conformance tests). */
export const all = [
  AuthRequired,
  InsufficientScope,
  PermissionDenied,
  ApiKeyRateLimited,
  ApiKeyUsageExceeded,
  InvalidRequest,
  InvalidIdempotencyKey,
  InvalidModelInput,
  MediaExpired,
  InputTooLarge,
  RequestNotFound,
  ModelNotFound,
  JobNotFound,
  ResultExpired,
  IdempotencyConflict,
  PriceChanged,
  ModelPriceUnavailable,
  PaymentReviewRequired,
  InsufficientCredits,
  TaskNotCancelable,
  RateLimited,
  ConcurrencyLimited,
  ExecutionUnavailable,
  UpstreamRateLimited,
  UpstreamError,
  PlatformBudgetExceeded,
  ExecutionTemporarilyUnavailable,
  AuthUnavailable,
  ApiUnavailable,
  CsrfRejected,
  EmailTaken
] as const

export type ApiError = InstanceType<(typeof all)[number]>

export const isApiError: (u: unknown) => u is ApiError = Schema.is(Schema.Union(all))

export const errorBody = (error: ApiError): ErrorBody => ({ code: error.code, error: error.message })
