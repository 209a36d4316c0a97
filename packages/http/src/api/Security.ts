/**
 * Authentication of the API: an API key as `Authorization: Bearer <key>` or `x-api-key: <key>`
 * (Bearer wins), read by one middleware so a request is authenticated and counted once, and the
 * scope each endpoint needs; the OpenAPI document lists both schemes and each operation's scope.
 * POST /api/v1/jobs uses `PresentedKey` instead (the key authenticated within the admission).
 */
import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import type { Accounts, Scope, TaskRunner } from "@taskmeter/kernel"
import { Errors, PresentedCredential } from "@taskmeter/kernel"
import { SESSION_SCHEME } from "./SessionSecurity.ts"

/** The authenticated caller, provided to every handler behind `Authentication`. */
export class CurrentCaller extends Context.Service<CurrentCaller, Accounts.Caller>()("@taskmeter/http/CurrentCaller") {}

/** Endpoint annotation: the scope a key needs to call it. */
export class RequiredScope extends Context.Service<RequiredScope, Scope.Scope>()("@taskmeter/http/RequiredScope") {}

export const API_KEY_HEADER = PresentedCredential.API_KEY_HEADER

export const BEARER_SCHEME = "bearerAuth"
export const API_KEY_SCHEME = "apiKeyAuth"

export const bearer = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(OpenApi.Description, "An API key (tm_...) sent as `Authorization: Bearer <key>`.")
)

/** What every endpoint that needs a key may answer about it. */
const keyErrors = [
  Errors.AuthRequired,
  Errors.CsrfRejected,
  Errors.InsufficientScope,
  Errors.PermissionDenied,
  Errors.ApiKeyRateLimited,
  Errors.AuthUnavailable
]

export class Authentication extends HttpApiMiddleware.Service<Authentication, { provides: CurrentCaller }>()(
  "@taskmeter/http/Authentication",
  { security: { [BEARER_SCHEME]: bearer }, error: keyErrors }
) {}

/**
 * Who submits behind `PresentedKey`: the key a request presents, not yet authenticated, or the
 * caller of its session (a request without a key but with a session cookie).
 */
export class CurrentKey extends Context.Service<CurrentKey, TaskRunner.Submitter>()("@taskmeter/http/CurrentKey") {}

/**
 * Finds the key as `Authentication` does and leaves its authentication to the handler; the
 * same scheme and error responses, so clients and the OpenAPI document see no difference.
 */
export class PresentedKey extends HttpApiMiddleware.Service<PresentedKey, { provides: CurrentKey }>()(
  "@taskmeter/http/PresentedKey",
  { security: { [BEARER_SCHEME]: bearer }, error: keyErrors }
) {}

type Operation = Record<string, any>

/**
 * Endpoint annotations for an endpoint that needs `scope`: the annotation the middleware
 * checks, and the operation's security requirements in the OpenAPI document. `transform`
 * edits the endpoint's operation further (one endpoint holds one OpenAPI transform).
 */
export const requireScope = (
  scope: Scope.Scope,
  transform: (operation: Operation) => Operation = (operation) => operation
): Context.Context<never> =>
  Context.merge(
    Context.make(RequiredScope, scope),
    OpenApi.annotations({
      transform: (operation) => ({
        ...transform(operation),
        description: [operation.description, `Requires an API key with scope \`${scope}\`.`]
          .filter((part) => part !== undefined)
          .join("\n\n"),
        security: [{ [BEARER_SCHEME]: [scope] }, { [API_KEY_SCHEME]: [scope] }, { [SESSION_SCHEME]: [] }]
      })
    })
  )
