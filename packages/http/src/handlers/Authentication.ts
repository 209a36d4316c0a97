/**
 * The Authentication middleware: finds the API key (Bearer first, then x-api-key), checks it with
 * the kernel's Accounts service (AUTH_REQUIRED, PERMISSION_DENIED, API_KEY_RATE_LIMITED,
 * AUTH_UNAVAILABLE), then the endpoint's scope (INSUFFICIENT_SCOPE), and provides the caller.
 * Its steps are exported for PresentedKey, which must answer exactly as this does.
 */
import { Context, Effect, Layer, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import type { HttpApiEndpoint } from "effect/http-api"
import { Accounts, Errors } from "@taskmeter/kernel"
import type { Scope } from "@taskmeter/kernel"
import { API_KEY_HEADER, Authentication, BEARER_SCHEME, CurrentCaller, RequiredScope } from "../api/Security.ts"

const missing = new Errors.AuthRequired({
  message: "This endpoint needs an API key: send it as Authorization: Bearer <key> or x-api-key: <key>."
})

/** The key the request presents (the Bearer credential, else x-api-key); AUTH_REQUIRED for neither. */
export const presentedKey = (
  credential: Redacted.Redacted<string>
): Effect.Effect<string, Errors.AuthRequired, HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const presented = Redacted.value(credential) || request.headers[API_KEY_HEADER]?.trim() || ""
    return presented === "" ? Effect.fail(missing) : Effect.succeed(presented)
  })

/** INSUFFICIENT_SCOPE for a key without `scope`, naming the endpoint that needs it. */
export const insufficientScope = (scope: Scope.Scope, endpoint: HttpApiEndpoint.Top) =>
  new Errors.InsufficientScope({
    message: `This API key lacks the scope ${scope}, which ${endpoint.method} ${endpoint.path} needs; use a key that has it.`
  })

/** The caller holding `presented`, if the key may call `endpoint` (its RequiredScope). */
export const authorize = (accounts: Accounts.Accounts["Service"], presented: string, endpoint: HttpApiEndpoint.Top) =>
  Effect.gen(function*() {
    const caller = yield* accounts.authenticate(presented)
    const scope = Context.getOrUndefined(endpoint.annotations, RequiredScope)
    if (scope !== undefined && !caller.scopes.includes(scope)) return yield* insufficientScope(scope, endpoint)
    return caller
  })

export const layer: Layer.Layer<Authentication, never, Accounts.Accounts> = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const accounts = yield* Accounts.Accounts
    return Authentication.of({
      [BEARER_SCHEME]: (httpEffect, { credential, endpoint }) =>
        Effect.gen(function*() {
          const caller = yield* authorize(accounts, yield* presentedKey(credential), endpoint)
          return yield* Effect.provideService(httpEffect, CurrentCaller, caller)
        })
    })
  })
)
