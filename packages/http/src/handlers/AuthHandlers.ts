/**
 * The auth group over the kernel's Users and Sessions: sign-up and sign-in check the Origin,
 * start a new session (a presented one is revoked: no id planted before sign-in lives on) and set
 * the cookie; sign-out revokes and clears it.
 */
import { Effect, Option } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Sessions, Users } from "@taskmeter/kernel"
import type { UserStore } from "@taskmeter/kernel"
import { Api } from "../Api.ts"
import type { Session } from "../api/AuthApi.ts"
import { CurrentSession } from "../api/SessionSecurity.ts"
import * as SessionCookie from "../SessionCookie.ts"
import * as SessionCredential from "./SessionCredential.ts"
import { toApiUnavailable } from "./StoreFailures.ts"

export const sessionView = (user: UserStore.UserRecord, accountId: string, role: UserStore.Role, csrfToken: string): Session => ({
  user: {
    id: user.id,
    email: user.email,
    emailVerified: user.emailVerifiedAt !== null,
    role,
    operator: user.operator
  },
  account: { id: accountId },
  csrfToken
})

export const layer = HttpApiBuilder.group(Api, "auth", (handlers) =>
  Effect.gen(function* () {
    const users = yield* Users.Users
    const sessions = yield* Sessions.Sessions

    /** Checks the Origin, revokes a session the request presents, runs `start` and sets the cookie to its session. */
    const signingIn = <E, R>(start: Effect.Effect<Users.SignedIn, E, R>) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        yield* SessionCredential.checkOrigin(request)
        const signedIn = yield* start
        const presented = SessionCookie.read(request)
        if (presented !== undefined) yield* sessions.revoke(presented)
        yield* SessionCookie.set(signedIn.session.secret)
        return sessionView(signedIn.user, signedIn.account.id, signedIn.role, signedIn.session.csrfToken)
      })

    return handlers
      .handle("signUp", ({ payload }) =>
        signingIn(users.signUp(payload)).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("signIn", ({ payload }) =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          signingIn(users.signIn({ ...payload, clientAddress: Option.getOrElse(request.remoteAddress, () => "unknown") }))
        ).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("session", () =>
        Effect.map(CurrentSession, ({ live }) => sessionView(live.user, live.record.accountId, live.role, live.csrfToken))
      )
      .handle("signOut", () =>
        Effect.gen(function* () {
          const { secret } = yield* CurrentSession
          yield* sessions.revoke(secret)
          yield* SessionCookie.clear
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("signOutEverywhere", () =>
        Effect.gen(function* () {
          const { live } = yield* CurrentSession
          yield* sessions.revokeAll(live.user.id)
          yield* SessionCookie.clear
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("verifyEmail", ({ payload }) =>
        users.verifyEmail(payload.token).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("requestPasswordReset", ({ payload }) =>
        users.requestPasswordReset(payload.email).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("confirmPasswordReset", ({ payload }) =>
        users.confirmPasswordReset(payload.token, payload.password).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
  })
)
