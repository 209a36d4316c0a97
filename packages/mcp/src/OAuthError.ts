/**
 * An error of the OAuth wire protocol (RFC 6749 §5.2, RFC 7591 §3.2.2, RFC 8707 §2): the
 * authorization server's endpoints answer with `{ error, error_description }` rather than the
 * service's `{ code, error }` body, because OAuth clients branch on these registered codes.
 * Errors of the MCP endpoint itself stay in the service's taxonomy (kernel Errors).
 */
import { Data } from "effect"

export type OAuthErrorCode =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "unauthorized_client"
  | "unsupported_grant_type"
  | "unsupported_response_type"
  | "invalid_scope"
  | "invalid_target"
  | "access_denied"
  | "invalid_redirect_uri"
  | "invalid_client_metadata"
  | "temporarily_unavailable"
  | "server_error"
  // Not registered by IANA; the MCP SDKs' own authorization servers answer rate-limited
  // registrations with it, and their clients recognise it.
  | "too_many_requests"

export class OAuthError extends Data.TaggedError("OAuthError")<{
  readonly error: OAuthErrorCode
  readonly description: string
  /** When to try again; sent as Retry-After. */
  readonly retryAfterSeconds?: number | undefined
}> {
  /** The HTTP status of this error at the token, registration and revocation endpoints. */
  get status(): number {
    switch (this.error) {
      case "invalid_client":
        return 401
      case "too_many_requests":
        return 429
      case "temporarily_unavailable":
        return 503
      case "server_error":
        return 500
      default:
        return 400
    }
  }

  get body(): { readonly error: OAuthErrorCode; readonly error_description: string } {
    return { error: this.error, error_description: this.description }
  }
}

export const oauthError = (error: OAuthErrorCode, description: string, retryAfterSeconds?: number): OAuthError =>
  new OAuthError({ error, description, retryAfterSeconds })
