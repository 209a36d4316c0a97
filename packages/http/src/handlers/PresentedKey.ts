/**
 * The PresentedKey middleware of POST /api/v1/jobs: finds the API key as Authentication does
 * (AUTH_REQUIRED when none is sent) and provides it unauthenticated (CurrentKey), for the kernel
 * to authenticate within the admission (TaskRunner.submit). A key's refusal still comes first: a
 * request that fails before the kernel gets the key authenticates it then, here for headers that
 * will not decode, in the handler (`keyFirst`) for a body that will not read or decode.
 */
import { Effect, Layer, Redacted, Result, Schema } from "effect"
import type { HttpApiEndpoint } from "effect/http-api"
import { HttpServerRequest } from "effect/http"
import { Accounts } from "@taskmeter/kernel"
import { BEARER_SCHEME, CurrentKey, PresentedKey } from "../api/Security.ts"
import * as Authentication from "./Authentication.ts"

/** Fails with `failure`, unless the key is refused: then with Authentication's answer, as it would have come first. */
export const keyFirst =
  (accounts: Accounts.Accounts["Service"], presented: Redacted.Redacted<string>, endpoint: HttpApiEndpoint.Top) =>
  <E>(failure: E) =>
    Effect.andThen(Authentication.authorize(accounts, Redacted.value(presented), endpoint), Effect.fail(failure))

/** Whether the request's headers decode as the endpoint declares them (the builder decodes them within this middleware). */
const headersDecode = (endpoint: HttpApiEndpoint.Top, headers: unknown): boolean =>
  endpoint.headers === undefined ||
  Result.isSuccess(Schema.decodeUnknownResult(endpoint.headers as Schema.Codec<unknown, unknown>)(headers))

export const layer: Layer.Layer<PresentedKey, never, Accounts.Accounts> = Layer.effect(
  PresentedKey,
  Effect.gen(function* () {
    const accounts = yield* Accounts.Accounts
    return PresentedKey.of({
      [BEARER_SCHEME]: (httpEffect, { endpoint }) =>
        Effect.gen(function* () {
          const presented = Redacted.make(yield* Authentication.presentedKey)
          const request = yield* HttpServerRequest.HttpServerRequest
          if (!headersDecode(endpoint, request.headers)) {
            yield* Authentication.authorize(accounts, Redacted.value(presented), endpoint)
          }
          return yield* Effect.provideService(httpEffect, CurrentKey, presented)
        })
    })
  })
)
