/**
 * Authentication of the API: an API key sent as `Authorization: Bearer <key>` or as
 * `x-api-key: <key>` (Bearer wins when both are sent), and the scope each endpoint needs.
 *
 * The middleware declares the Bearer scheme; the `x-api-key` alternative is read by the same
 * middleware, so a request is authenticated exactly once (and counted once against the key's
 * rate limit). The OpenAPI document lists both schemes and, per operation, the scope
 * (OpenAPI 3.1 allows role names in the requirement of any scheme).
 *
 * POST /api/v1/jobs is behind `PresentedKey` instead: the same scheme and answers, but the key
 * is authenticated by the kernel within the admission (one store call for both), so the
 * middleware only finds it (see handlers/PresentedKey).
 */
import { Context } from "effect"
import type { Redacted } from "effect"
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import type { Accounts, Scope } from "@taskmeter/kernel"
import { Errors, PresentedCredential } from "@taskmeter/kernel"

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
  Errors.InsufficientScope,
  Errors.PermissionDenied,
  Errors.ApiKeyRateLimited,
  Errors.AuthUnavailable
]

export class Authentication extends HttpApiMiddleware.Service<Authentication, { provides: CurrentCaller }>()(
  "@taskmeter/http/Authentication",
  { security: { [BEARER_SCHEME]: bearer }, error: keyErrors }
) {}

/** The key a request presents, not yet authenticated, provided behind `PresentedKey`. */
export class CurrentKey extends Context.Service<CurrentKey, Redacted.Redacted<string>>()("@taskmeter/http/CurrentKey") {}

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
        security: [{ [BEARER_SCHEME]: [scope] }, { [API_KEY_SCHEME]: [scope] }]
      })
    })
  )
