/**
 * The SessionAuth middleware: the endpoints only a signed-in person may call. An API key is
 * PERMISSION_DENIED there; otherwise the session cookie is resolved and CSRF-checked
 * (SessionCredential) and provided as CurrentSession.
 */
import { Effect, Layer } from "effect"
import { HttpServerRequest } from "effect/http"
import { Errors, PresentedCredential, RequestFacts } from "@taskmeter/kernel"
import type { Sessions } from "@taskmeter/kernel"
import { CurrentSession, SESSION_SCHEME, SessionAuth } from "../api/SessionSecurity.ts"
import type * as SessionCookie from "../SessionCookie.ts"
import * as SessionCredential from "./SessionCredential.ts"

export const layer: Layer.Layer<SessionAuth, never, Sessions.Sessions | SessionCookie.SessionSettings> = Layer.effect(
  SessionAuth,
  Effect.gen(function* () {
    const context = yield* Effect.context<Sessions.Sessions | SessionCookie.SessionSettings>()
    return SessionAuth.of({
      [SESSION_SCHEME]: (httpEffect, { endpoint }) =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          if (PresentedCredential.fromHeaders(request.headers) !== undefined) {
            return yield* new Errors.PermissionDenied({
              message: `${endpoint.method} ${endpoint.path} is for the console under a signed-in session; an API key cannot call it.`
            })
          }
          const session = yield* Effect.provide(SessionCredential.resolve(request), context)
          yield* RequestFacts.note({ accountId: session.live.record.accountId })
          return yield* Effect.provideService(httpEffect, CurrentSession, session)
        })
    })
  })
)
