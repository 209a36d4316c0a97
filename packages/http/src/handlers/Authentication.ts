/**
 * The Authentication middleware: finds the API key (PresentedCredential), checks it with
 * the kernel's Accounts service (AUTH_REQUIRED, PERMISSION_DENIED, API_KEY_RATE_LIMITED,
 * AUTH_UNAVAILABLE), then the endpoint's scope (INSUFFICIENT_SCOPE), and provides the caller.
 * Without an API key header, a session cookie is the credential instead (SessionCredential).
 * Its steps are exported for PresentedKey, which must answer exactly as this does.
 */
import { Context, Effect, Layer } from "effect"
import { HttpServerRequest } from "effect/http"
import type { HttpApiEndpoint } from "effect/http-api"
import { Accounts, Errors, PresentedCredential, RequestFacts } from "@taskmeter/kernel"
import type { Sessions } from "@taskmeter/kernel"
import type * as SessionCookie from "../SessionCookie.ts"
import type { Scope } from "@taskmeter/kernel"
import { Authentication, BEARER_SCHEME, CurrentCaller, RequiredScope } from "../api/Security.ts"
import * as SessionCredential from "./SessionCredential.ts"

const missing = new Errors.AuthRequired({
  message: "This endpoint needs an API key: send it as Authorization: Bearer <key> or x-api-key: <key>."
})

/** The key a request presents (PresentedCredential); AUTH_REQUIRED for none. */
export const keyOf = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<string, Errors.AuthRequired> => {
  const presented = PresentedCredential.fromHeaders(request.headers)
  return presented === undefined ? Effect.fail(missing) : Effect.succeed(presented.secret)
}

/** The key the current request presents; AUTH_REQUIRED for none. */
export const presentedKey: Effect.Effect<string, Errors.AuthRequired, HttpServerRequest.HttpServerRequest> = Effect.flatMap(
  HttpServerRequest.HttpServerRequest,
  keyOf
)

/** INSUFFICIENT_SCOPE for a key without `scope`, naming the endpoint that needs it. */
export const insufficientScope = (scope: Scope.Scope, endpoint: HttpApiEndpoint.Top) =>
  new Errors.InsufficientScope({
    message: `This API key lacks the scope ${scope}, which ${endpoint.method} ${endpoint.path} needs; use a key that has it.`
  })

/** The caller holding `presented`, if the key may call `endpoint` (its RequiredScope). */
export const authorize = Effect.fnUntraced(function* (
  accounts: Accounts.Accounts["Service"],
  presented: string,
  endpoint: HttpApiEndpoint.Top
) {
  const caller = yield* accounts.authenticate(presented)
  yield* RequestFacts.note({ accountId: caller.accountId })
  const scope = Context.getOrUndefined(endpoint.annotations, RequiredScope)
  if (scope !== undefined && !caller.scopes.includes(scope)) return yield* insufficientScope(scope, endpoint)
  return caller
})

/** The caller of a request without an API key but with a session cookie (SessionCredential). */
export const sessionCaller = Effect.fnUntraced(function* (request: HttpServerRequest.HttpServerRequest) {
  const { live } = yield* SessionCredential.resolve(request)
  const caller = SessionCredential.callerOf(live)
  yield* RequestFacts.note({ accountId: caller.accountId })
  return caller
})

export const layer: Layer.Layer<Authentication, never, Accounts.Accounts | Sessions.Sessions | SessionCookie.SessionSettings> =
  Layer.effect(
    Authentication,
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const context = yield* Effect.context<Sessions.Sessions | SessionCookie.SessionSettings>()
      const guarded = Effect.fnUntraced(function* <A, E, R>(httpEffect: Effect.Effect<A, E, R>, endpoint: HttpApiEndpoint.Top) {
        const request = yield* HttpServerRequest.HttpServerRequest
        const caller = SessionCredential.usesSession(request)
          ? yield* Effect.provide(sessionCaller(request), context)
          : yield* authorize(accounts, yield* presentedKey, endpoint)
        return yield* Effect.provideService(httpEffect, CurrentCaller, caller)
      })
      return Authentication.of({
        [BEARER_SCHEME]: (httpEffect, { endpoint }) => guarded(httpEffect, endpoint)
      })
    })
  )
