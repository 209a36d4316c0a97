/**
 * The PresentedKey middleware of POST /api/v1/jobs: finds the API key as Authentication does
 * (AUTH_REQUIRED when none is sent) and hands it to the handler unauthenticated, for the kernel
 * to authenticate within the admission (TaskRunner.submit: one store call, not two).
 *
 * Clients must still get what Authentication gave them, where a key refusal (or
 * INSUFFICIENT_SCOPE) comes before every other answer. The kernel keeps that order for what it
 * judges; what fails before the handler hands it the key does not reach it: the Idempotency-Key
 * header (decoded inside this middleware), the body's size and shape. So the rule, kept here
 * alone: a request that fails before its key was handed over is authenticated then, as
 * Authentication would have done first, and answers the key's refusal if there is one, else its
 * own failure. A key handed over is never authenticated here as well: it would be counted twice
 * against its rate. The middleware learns of the handover from `CurrentKey.authenticateWith`,
 * not from the failure's type: the builder wraps the failures a security middleware sees in a
 * type of its own.
 */
import { Cause, Effect, Layer, Redacted } from "effect"
import { Accounts } from "@taskmeter/kernel"
import { BEARER_SCHEME, CurrentKey, PresentedKey } from "../api/Security.ts"
import * as Authentication from "./Authentication.ts"

export const layer: Layer.Layer<PresentedKey, never, Accounts.Accounts> = Layer.effect(
  PresentedKey,
  Effect.gen(function*() {
    const accounts = yield* Accounts.Accounts
    return PresentedKey.of({
      [BEARER_SCHEME]: (httpEffect, { credential, endpoint }) =>
        Effect.gen(function*() {
          const presented = yield* Authentication.presentedKey(credential)
          let handedOver = false
          const key = CurrentKey.of({
            authenticateWith: (call) =>
              Effect.suspend(() => {
                handedOver = true
                return call(Redacted.make(presented))
              })
          })
          return yield* httpEffect.pipe(
            Effect.provideService(CurrentKey, key),
            Effect.catchCause((cause) =>
              handedOver || Cause.hasInterruptsOnly(cause)
                ? Effect.failCause(cause)
                : Effect.andThen(Authentication.authorize(accounts, presented, endpoint), Effect.failCause(cause))
            )
          )
        })
    })
  })
)
