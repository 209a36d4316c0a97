/**
 * Classification of upstream failures into `ProviderError` reasons, written once for every adapter
 * (adapters never invent error classes): 429 RateLimited; 408, 425, 5xx and connection failures
 * before sending Retryable; other 4xx Terminal; a connection lost after sending, a response timeout
 * or an unparsable 2xx body OutcomeUnknown on `submit` but Retryable on a `poll`, which is safe to
 * repeat. Why a 5xx on submit is retried: docs/decisions.md, Tasks and providers.
 */
import { Provider } from "@taskmeter/kernel"

export type Step = "submit" | "poll"

/** The `errorCode` values adapters give Terminal errors and failed polls. */
export const ErrorCodes = {
  /** The upstream refused the input (400, 413, 422) or the job failed on it. */
  RejectedInput: "UPSTREAM_REJECTED_INPUT",
  /** Our credentials for the upstream are missing, wrong or lack a permission (401, 403). */
  AuthFailed: "UPSTREAM_AUTH_FAILED",
  /** The operator's upstream account cannot pay for the job (402). */
  PaymentRequired: "UPSTREAM_PAYMENT_REQUIRED",
  /** The upstream does not know the model or the job (404, 410). */
  NotFound: "UPSTREAM_NOT_FOUND",
  /** Any other 4xx. */
  ClientError: "UPSTREAM_CLIENT_ERROR",
  /** The upstream job ran and failed. */
  GenerationFailed: "UPSTREAM_GENERATION_FAILED",
  /** The upstream refused the content (moderation, sensitive words). */
  ContentRejected: "UPSTREAM_CONTENT_REJECTED",
  /** The upstream job was canceled upstream. */
  Canceled: "UPSTREAM_CANCELED",
  /** The job finished without any result of the model's kind. */
  NoOutput: "UPSTREAM_NO_OUTPUT",
  /** The job finished but its result cannot be read; polling again returns the same. */
  MalformedResult: "UPSTREAM_MALFORMED_RESULT",
  /** The adapter was asked to run a model it does not serve (a wiring defect). */
  UnsupportedModel: "PROVIDER_MODEL_UNSUPPORTED",
  /** The simulated provider's deterministic failure. */
  SimulatedFailure: "SIMULATED_FAILURE"
} as const

const terminalCode = (status: number): string => {
  switch (status) {
    case 400:
    case 413:
    case 422:
      return ErrorCodes.RejectedInput
    case 401:
    case 403:
      return ErrorCodes.AuthFailed
    case 402:
      return ErrorCodes.PaymentRequired
    case 404:
    case 410:
      return ErrorCodes.NotFound
    default:
      return ErrorCodes.ClientError
  }
}

/** Whether a status (HTTP or envelope) asks for the same request again later. */
export const isRetryableStatus = (status: number): boolean => status === 408 || status === 425 || status >= 500

/** The error for a non-success status. `message` is the upstream's own explanation, when it gave one. */
export const fromStatus = (
  status: number,
  detail: { readonly message?: string | undefined; readonly retryAfterMs?: number | undefined } = {}
): Provider.ProviderError => {
  const message = `upstream answered ${status}${detail.message ? `: ${detail.message}` : ""}`
  if (status === 429) {
    return new Provider.ProviderError({ reason: "RateLimited", message, status, retryAfterMs: detail.retryAfterMs })
  }
  if (isRetryableStatus(status) || status < 400) {
    return new Provider.ProviderError({ reason: "Retryable", message, status })
  }
  return new Provider.ProviderError({ reason: "Terminal", message, status, errorCode: terminalCode(status) })
}

/**
 * Transport failures that happen before the request leaves this machine: the upstream cannot
 * have seen it. Anything else (a reset socket, a timeout waiting for the answer, a mocked
 * network error) may have reached it.
 */
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "CERT_HAS_EXPIRED",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "DEPTH_ZERO_SELF_SIGNED_CERT"
])

const codeOf = (error: unknown): string | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  if ("code" in error && typeof error.code === "string") return error.code
  if ("errors" in error && Array.isArray(error.errors)) return codeOf(error.errors[0])
  return undefined
}

/** The transport error code of a rejected `fetch` (undici puts it on `cause`). */
export const transportCode = (error: unknown): string | undefined =>
  codeOf(typeof error === "object" && error !== null && "cause" in error ? error.cause : undefined) ?? codeOf(error)

/** The error for a `fetch` that rejected or a body that could not be read. */
export const fromTransport = (step: Step, error: unknown, what: string): Provider.ProviderError => {
  const code = transportCode(error)
  const text = `${what}${code ? ` (${code})` : ""}: ${error instanceof Error ? error.message : String(error)}`
  if (code !== undefined && NOT_SENT.has(code)) {
    return new Provider.ProviderError({ reason: "Retryable", message: `request not sent, ${text}`, cause: error })
  }
  return step === "submit"
    ? new Provider.ProviderError({
        reason: "OutcomeUnknown",
        message: `submission may have reached the upstream, ${text}`,
        cause: error
      })
    : new Provider.ProviderError({ reason: "Retryable", message: text, cause: error })
}

/** The error for a success status whose body cannot be understood. */
export const malformed = (step: Step, message: string, cause?: unknown): Provider.ProviderError =>
  step === "submit"
    ? new Provider.ProviderError({
        reason: "OutcomeUnknown",
        message: `the upstream accepted the submission but its answer is unreadable: ${message}`,
        cause
      })
    : new Provider.ProviderError({ reason: "Retryable", message: `unreadable upstream answer: ${message}`, cause })

/** A Terminal error with a code of `ErrorCodes`. */
export const terminal = (errorCode: string, message: string, cause?: unknown): Provider.ProviderError =>
  new Provider.ProviderError({ reason: "Terminal", errorCode, message, cause })

export const unsupportedModel = (provider: string, model: string): Provider.ProviderError =>
  terminal(ErrorCodes.UnsupportedModel, `the ${provider} adapter does not serve the model ${JSON.stringify(model)}`)

/**
 * Retry-After as milliseconds: delta-seconds or an HTTP date (RFC 9110), undefined when absent
 * or unreadable. A date in the past gives 0.
 */
export const parseRetryAfter = (value: string | null | undefined, nowMs: number): number | undefined => {
  if (value === null || value === undefined) return undefined
  const text = value.trim()
  if (/^\d+$/.test(text)) return Number(text) * 1000
  // Date.parse accepts odd strings ("-5"); an HTTP date always names its day and month.
  const at = /[a-z]/i.test(text) ? Date.parse(text) : Number.NaN
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs)
}
