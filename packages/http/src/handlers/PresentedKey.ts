/**
 * The PresentedKey middleware of POST /api/v1/jobs: finds the API key as Authentication does (or,
 * without one, the session, checked and provided as its caller)
 * (AUTH_REQUIRED when none is sent) and provides it unauthenticated (CurrentKey), for the kernel
 * to authenticate within the admission (TaskRunner.submit). A key's refusal still comes first: a
 * request that fails before the kernel gets the key authenticates it then, here for headers that
 * will not decode, in the handler (`keyFirst`) for a body that will not read or decode.
 */
import { Effect, Layer, Redacted, Result, Schema } from "effect"
import type { HttpApiEndpoint } from "effect/http-api"
import { HttpServerRequest } from "effect/http"
import { Accounts, TaskRunner } from "@taskmeter/kernel"
import type { Sessions } from "@taskmeter/kernel"
import type * as SessionCookie from "../SessionCookie.ts"
import { BEARER_SCHEME, CurrentKey, PresentedKey } from "../api/Security.ts"
import * as Authentication from "./Authentication.ts"
import * as SessionCredential from "./SessionCredential.ts"

/**
 * Fails with `failure`, unless the key is refused: then with Authentication's answer, as it would
 * have come first. A session was checked already.
 */
export const keyFirst =
  (accounts: Accounts.Accounts["Service"], who: TaskRunner.Submitter, endpoint: HttpApiEndpoint.Top) =>
  <E>(failure: E) =>
    TaskRunner.isPresentedKey(who)
      ? Effect.andThen(Authentication.authorize(accounts, Redacted.value(who.secret), endpoint), Effect.fail(failure))
      : Effect.fail(failure)

/** Whether the request's headers decode as the endpoint declares them (the builder decodes them within this middleware). */
const headersDecode = (endpoint: HttpApiEndpoint.Top, headers: unknown): boolean =>
  endpoint.headers === undefined ||
  Result.isSuccess(Schema.decodeUnknownResult(endpoint.headers as Schema.Codec<unknown, unknown>)(headers))

export const layer: Layer.Layer<PresentedKey, never, Accounts.Accounts | Sessions.Sessions | SessionCookie.SessionSettings> =
  Layer.effect(
    PresentedKey,
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const context = yield* Effect.context<Sessions.Sessions | SessionCookie.SessionSettings>()
      return PresentedKey.of({
        [BEARER_SCHEME]: (httpEffect, { endpoint }) =>
          Effect.gen(function* () {
            const request = yield* HttpServerRequest.HttpServerRequest
            if (SessionCredential.usesSession(request)) {
              const caller = yield* Effect.provide(Authentication.sessionCaller(request), context)
              return yield* Effect.provideService(httpEffect, CurrentKey, caller)
            }
            const presented = Redacted.make(yield* Authentication.presentedKey)
            if (!headersDecode(endpoint, request.headers)) {
              yield* Authentication.authorize(accounts, Redacted.value(presented), endpoint)
            }
            return yield* Effect.provideService(httpEffect, CurrentKey, TaskRunner.presentedKey(presented))
          })
      })
    })
  )
