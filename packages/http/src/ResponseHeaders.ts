/**
 * Headers every response of the server carries unless its route set them: `Cache-Control:
 * no-store` (answers name an account's tasks, balances and keys; downloads set their own
 * private max-age), `X-Content-Type-Options: nosniff`, and on a 401 `WWW-Authenticate: Bearer
 * realm="taskmeter"` (MCP's 401 keeps its own challenge, which names its resource metadata).
 */
import { HttpServerResponse } from "effect/http"

export const REALM = "taskmeter"

/** The challenge of a 401 for an API key or the operator token. */
export const BEARER_CHALLENGE = `Bearer realm="${REALM}"`

/** `response` with the defaults it lacks. */
export const withDefaults = (response: HttpServerResponse.HttpServerResponse): HttpServerResponse.HttpServerResponse => {
  const missing: Record<string, string> = {}
  if (response.headers["cache-control"] === undefined) missing["cache-control"] = "no-store"
  if (response.headers["x-content-type-options"] === undefined) missing["x-content-type-options"] = "nosniff"
  if (response.status === 401 && response.headers["www-authenticate"] === undefined) {
    missing["www-authenticate"] = BEARER_CHALLENGE
  }
  return Object.keys(missing).length === 0 ? response : HttpServerResponse.setHeaders(response, missing)
}
