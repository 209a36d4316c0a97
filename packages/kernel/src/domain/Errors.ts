/**
 * The error taxonomy of the service: one Schema-backed tagged error per code of the spec's
 * Errors table, carrying its `code`, HTTP status (`httpApiStatus`), a message that says what to
 * fix, and structured fields (`retryAfterSeconds`, sent as `Retry-After`). Each class encodes
 * to and decodes from the spec's body `{ code, error }`, so API definitions list the classes.
 */
import { Effect, Schema, SchemaIssue, SchemaTransformation } from "effect"

/** The spec's codes, in the order of its Errors table. */
export const codes = [
  "AUTH_REQUIRED",
  "INSUFFICIENT_SCOPE",
  "PERMISSION_DENIED",
  "API_KEY_RATE_LIMITED",
  "API_KEY_USAGE_EXCEEDED",
  "INVALID_REQUEST",
  "INVALID_IDEMPOTENCY_KEY",
  "INVALID_MODEL_INPUT",
  "INPUT_TOO_LARGE",
  "REQUEST_NOT_FOUND",
  "MODEL_NOT_FOUND",
  "JOB_NOT_FOUND",
  "IDEMPOTENCY_CONFLICT",
  "PRICE_CHANGED",
  "MODEL_PRICE_UNAVAILABLE",
  "PAYMENT_REVIEW_REQUIRED",
  "INSUFFICIENT_CREDITS",
  "RATE_LIMITED",
  "CONCURRENCY_LIMITED",
  "EXECUTION_UNAVAILABLE",
  "UPSTREAM_RATE_LIMITED",
  "UPSTREAM_ERROR",
  "PLATFORM_BUDGET_EXCEEDED",
  "EXECUTION_TEMPORARILY_UNAVAILABLE",
  "AUTH_UNAVAILABLE",
  "API_UNAVAILABLE"
] as const
export type ErrorCode = (typeof codes)[number]

/** The spec's error body. Clients branch on `code`; `error` is for people. */
export const ErrorBody = Schema.Struct({
  code: Schema.Literals(codes).annotate({ description: "Stable error code; clients branch on it." }),
  error: Schema.String.annotate({ description: "What went wrong and what to fix, for people." })
}).annotate({ identifier: "ErrorBody", description: "Every error response has this body." })
export type ErrorBody = typeof ErrorBody.Type

const define = <const Tag extends string, const Code extends ErrorCode, const Status extends number>(
  tag: Tag,
  code: Code,
  status: Status,
  condition: string
) => {
  const Type = Schema.Struct({
    _tag: Schema.tag(tag),
    message: Schema.String,
    retryAfterSeconds: Schema.optionalKey(Schema.Number)
  })
  // On the wire only `{ code, error }`: structured fields are for servers to use, not to send.
  const wire = ErrorBody.pipe(
    Schema.decodeTo(
      Type,
      SchemaTransformation.transformEffect({
        decode: (body, options) =>
          body.code === code
            ? Effect.succeed({ _tag: tag, message: body.error })
            : Effect.fail(new SchemaIssue.InvalidValue({ expected: code }, body, options)),
        encode: (error) => Effect.succeed({ code, error: error.message })
      })
    )
  )
  return class ApiError extends Schema.Error<ApiError>(tag)(Type.rebuild(wire.ast), {
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
export class InvalidModelInput extends define(
  "InvalidModelInput",
  "INVALID_MODEL_INPUT",
  400,
  "input violates the model schema: unknown field, missing required field, or invalid value."
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
export class ModelNotFound extends define("ModelNotFound", "MODEL_NOT_FOUND", 404, "No model has this slug.") {}
export class JobNotFound extends define(
  "JobNotFound",
  "JOB_NOT_FOUND",
  404,
  "No task (or result) with this id belongs to the account."
) {}
export class IdempotencyConflict extends define(
  "IdempotencyConflict",
  "IDEMPOTENCY_CONFLICT",
  409,
  "The Idempotency-Key was already used with different input."
) {}
export class PriceChanged extends define("PriceChanged", "PRICE_CHANGED", 409, "The price differs from expectedPriceMicros.") {}
export class ModelPriceUnavailable extends define(
  "ModelPriceUnavailable",
  "MODEL_PRICE_UNAVAILABLE",
  409,
  "No price is configured for the model, or it is disabled."
) {}
export class PaymentReviewRequired extends define(
  "PaymentReviewRequired",
  "PAYMENT_REVIEW_REQUIRED",
  409,
  "A refund left an uncovered balance; tasks cannot be submitted until it is covered."
) {}
export class InsufficientCredits extends define(
  "InsufficientCredits",
  "INSUFFICIENT_CREDITS",
  409,
  "Available credits do not cover the task price."
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
export class PlatformBudgetExceeded extends define(
  "PlatformBudgetExceeded",
  "PLATFORM_BUDGET_EXCEEDED",
  503,
  "The model is temporarily unavailable."
) {}
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
  InputTooLarge,
  RequestNotFound,
  ModelNotFound,
  JobNotFound,
  IdempotencyConflict,
  PriceChanged,
  ModelPriceUnavailable,
  PaymentReviewRequired,
  InsufficientCredits,
  RateLimited,
  ConcurrencyLimited,
  ExecutionUnavailable,
  UpstreamRateLimited,
  UpstreamError,
  PlatformBudgetExceeded,
  ExecutionTemporarilyUnavailable,
  AuthUnavailable,
  ApiUnavailable
] as const

export type ApiError = InstanceType<(typeof all)[number]>

export const isApiError: (u: unknown) => u is ApiError = Schema.is(Schema.Union(all))

export const errorBody = (error: ApiError): ErrorBody => ({ code: error.code, error: error.message })
