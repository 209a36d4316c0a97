/**
 * The auth group over the kernel's Users and Sessions: sign-up and sign-in check the Origin,
 * start a new session (a presented one is revoked: no id planted before sign-in lives on) and set
 * the cookie; sign-out revokes and clears it.
 */
import { Effect } from "effect"
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
import { clientSource } from "./ClientAddress.ts"

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

/**
 * Checks the Origin, runs `start`, revokes a session the request presented and sets the cookie to
 * the new one: the answer of every sign-in (password, sign-up, passkey).
 */
export const signingInWith =
  (sessions: Sessions.Sessions["Service"]) =>
  <E, R>(start: Effect.Effect<Users.SignedIn, E, R>) =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      yield* SessionCredential.checkOrigin(request)
      const signedIn = yield* start
      const presented = SessionCookie.read(request)
      if (presented !== undefined) yield* sessions.revoke(presented)
      yield* SessionCookie.set(signedIn.session.secret)
      return sessionView(signedIn.user, signedIn.account.id, signedIn.role, signedIn.session.csrfToken)
    })

export const layer = HttpApiBuilder.group(Api, "auth", (handlers) =>
  Effect.gen(function* () {
    const users = yield* Users.Users
    const sessions = yield* Sessions.Sessions

    const signingIn = signingInWith(sessions)

    return handlers
      .handle("signUp", ({ payload }) =>
        signingIn(users.signUp(payload)).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("signIn", ({ payload }) =>
        Effect.flatMap(clientSource, (clientAddress) => signingIn(users.signIn({ ...payload, clientAddress }))).pipe(
          Effect.catchTag("StoreUnavailable", toApiUnavailable)
        )
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
