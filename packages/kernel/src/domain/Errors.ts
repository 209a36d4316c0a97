/**
 * The error taxonomy of the service: one tagged error per code of the spec's Errors table,
 * each carrying its HTTP status, its `code` and a message that tells the caller what to fix.
 * Servers turn any of them into the spec's body `{ code, error }` with `errorBody`, the one
 * place that shape is produced.
 *
 * A 429 or 503 may carry `retryAfterSeconds`, which servers send as `Retry-After`.
 */
import { Data } from "effect"

export interface ApiErrorFields {
  readonly message: string
  readonly retryAfterSeconds?: number
}

const define = <const Tag extends string, const Code extends string, const Status extends number>(
  tag: Tag,
  code: Code,
  status: Status
) => {
  class ApiErrorClass extends Data.TaggedError(tag)<ApiErrorFields> {
    static readonly code: Code = code
    static readonly status: Status = status
    readonly code: Code = code
    readonly status: Status = status
  }
  return ApiErrorClass
}

export class AuthRequired extends define("AuthRequired", "AUTH_REQUIRED", 401) {}
export class InsufficientScope extends define("InsufficientScope", "INSUFFICIENT_SCOPE", 403) {}
export class PermissionDenied extends define("PermissionDenied", "PERMISSION_DENIED", 403) {}
export class ApiKeyRateLimited extends define("ApiKeyRateLimited", "API_KEY_RATE_LIMITED", 429) {}
export class ApiKeyUsageExceeded extends define("ApiKeyUsageExceeded", "API_KEY_USAGE_EXCEEDED", 429) {}
export class InvalidRequest extends define("InvalidRequest", "INVALID_REQUEST", 400) {}
export class InvalidIdempotencyKey extends define("InvalidIdempotencyKey", "INVALID_IDEMPOTENCY_KEY", 400) {}
export class InvalidModelInput extends define("InvalidModelInput", "INVALID_MODEL_INPUT", 400) {}
/** The spec allows 400 or 413; 413 is what HTTP clients and proxies understand as "too large". */
export class InputTooLarge extends define("InputTooLarge", "INPUT_TOO_LARGE", 413) {}
export class RequestNotFound extends define("RequestNotFound", "REQUEST_NOT_FOUND", 404) {}
export class ModelNotFound extends define("ModelNotFound", "MODEL_NOT_FOUND", 404) {}
export class JobNotFound extends define("JobNotFound", "JOB_NOT_FOUND", 404) {}
export class IdempotencyConflict extends define("IdempotencyConflict", "IDEMPOTENCY_CONFLICT", 409) {}
export class PriceChanged extends define("PriceChanged", "PRICE_CHANGED", 409) {}
export class ModelPriceUnavailable extends define("ModelPriceUnavailable", "MODEL_PRICE_UNAVAILABLE", 409) {}
export class PaymentReviewRequired extends define("PaymentReviewRequired", "PAYMENT_REVIEW_REQUIRED", 409) {}
export class InsufficientCredits extends define("InsufficientCredits", "INSUFFICIENT_CREDITS", 409) {}
export class RateLimited extends define("RateLimited", "RATE_LIMITED", 429) {}
export class ConcurrencyLimited extends define("ConcurrencyLimited", "CONCURRENCY_LIMITED", 429) {}
export class ExecutionUnavailable extends define("ExecutionUnavailable", "EXECUTION_UNAVAILABLE", 503) {}
export class UpstreamRateLimited extends define("UpstreamRateLimited", "UPSTREAM_RATE_LIMITED", 429) {}
export class UpstreamError extends define("UpstreamError", "UPSTREAM_ERROR", 502) {}
export class PlatformBudgetExceeded extends define("PlatformBudgetExceeded", "PLATFORM_BUDGET_EXCEEDED", 503) {}
export class ExecutionTemporarilyUnavailable
  extends define("ExecutionTemporarilyUnavailable", "EXECUTION_TEMPORARILY_UNAVAILABLE", 503)
{}
export class AuthUnavailable extends define("AuthUnavailable", "AUTH_UNAVAILABLE", 503) {}
export class ApiUnavailable extends define("ApiUnavailable", "API_UNAVAILABLE", 503) {}

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
export type ErrorCode = ApiError["code"]

const apiErrorTags: ReadonlySet<string> = new Set(all.map((E) => new E({ message: "" })._tag))

export const isApiError = (u: unknown): u is ApiError =>
  typeof u === "object" && u !== null && "_tag" in u && apiErrorTags.has(String(u._tag))

/** The spec's error body. Clients branch on `code`; `error` is for people. */
export interface ErrorBody {
  readonly code: ErrorCode
  readonly error: string
}

export const errorBody = (error: ApiError): ErrorBody => ({ code: error.code, error: error.message })
