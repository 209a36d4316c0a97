/**
 * The console's credential: the session cookie `taskmeter_session` (set by sign-in and sign-up).
 * `SessionAuth` guards the endpoints only a signed-in person may call (the session itself, sign
 * out, API keys): an API key there is PERMISSION_DENIED; unsafe methods need the Origin and the
 * X-CSRF-Token check. It provides the live session (CurrentSession).
 */
import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import { Errors } from "@taskmeter/kernel"
import type { Sessions } from "@taskmeter/kernel"

export const SESSION_SCHEME = "sessionCookie"

export const sessionCookie = HttpApiSecurity.apiKey({ in: "cookie", key: "taskmeter_session" }).pipe(
  HttpApiSecurity.annotate(
    OpenApi.Description,
    "The console's session cookie, set by sign-in. Requests that change something (POST, PUT, PATCH, DELETE) under it " +
      "also need an Origin header naming this server and `X-CSRF-Token: <csrfToken>`; without an API key header, every " +
      "API endpoint takes it in place of a key."
  )
)

/** The session of the request, its secret (the cookie's value) with it. */
export class CurrentSession extends Context.Service<
  CurrentSession,
  { readonly secret: string; readonly live: Sessions.LiveSession }
>()("@taskmeter/http/CurrentSession") {}

export class SessionAuth extends HttpApiMiddleware.Service<SessionAuth, { provides: CurrentSession }>()(
  "@taskmeter/http/SessionAuth",
  {
    security: { [SESSION_SCHEME]: sessionCookie },
    error: [Errors.AuthRequired, Errors.CsrfRejected, Errors.PermissionDenied, Errors.AuthUnavailable]
  }
) {}
