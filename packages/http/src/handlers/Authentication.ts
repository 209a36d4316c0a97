/**
 * The Authentication middleware: finds the API key (Bearer first, then x-api-key), checks it with
 * the kernel's Accounts service (AUTH_REQUIRED, PERMISSION_DENIED, API_KEY_RATE_LIMITED,
 * AUTH_UNAVAILABLE), then the endpoint's scope (INSUFFICIENT_SCOPE), and provides the caller.
 */
import { Context, Effect, Layer, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import { Accounts, Errors } from "@taskmeter/kernel"
import { API_KEY_HEADER, Authentication, BEARER_SCHEME, CurrentCaller, RequiredScope } from "../api/Security.ts"

const missing = new Errors.AuthRequired({
  message: "This endpoint needs an API key: send it as Authorization: Bearer <key> or x-api-key: <key>."
})

export const layer: Layer.Layer<Authentication, never, Accounts.Accounts> = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const accounts = yield* Accounts.Accounts
    return Authentication.of({
      [BEARER_SCHEME]: (httpEffect, { credential, endpoint }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const presented = Redacted.value(credential) || request.headers[API_KEY_HEADER]?.trim() || ""
          if (presented === "") return yield* missing
          const caller = yield* accounts.authenticate(presented)
          const scope = Context.getOrUndefined(endpoint.annotations, RequiredScope)
          if (scope !== undefined && !caller.scopes.includes(scope)) {
            return yield* new Errors.InsufficientScope({
              message: `This API key lacks the scope ${scope}, which ${endpoint.method} ${endpoint.path} needs; use a key that has it.`
            })
          }
          return yield* Effect.provideService(httpEffect, CurrentCaller, caller)
        })
    })
  })
)
