/**
 * A signed-in session as a request's credential, used where no API key is sent: the cookie's
 * session resolved by the kernel's Sessions (AUTH_REQUIRED when it ended, AUTH_UNAVAILABLE when
 * the store is unreachable), and for unsafe methods (POST, PUT, PATCH, DELETE) the CSRF check:
 * an Origin header naming the public base URL's origin or the request's Host, and the header
 * X-CSRF-Token equal to the session's token (CSRF_REJECTED otherwise). The caller of a session
 * acts for the session's account with every scope.
 */
import { Effect } from "effect"
import type { HttpServerRequest } from "effect/http"
import { Errors, PresentedCredential, Scope, Sessions } from "@taskmeter/kernel"
import type { Accounts } from "@taskmeter/kernel"
import * as SessionCookie from "../SessionCookie.ts"

const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"])

/** Whether the request sends no API key but a session cookie: then the session is its credential. */
export const usesSession = (request: HttpServerRequest.HttpServerRequest): boolean =>
  request.headers.authorization === undefined &&
  request.headers[PresentedCredential.API_KEY_HEADER] === undefined &&
  SessionCookie.read(request) !== undefined

const ended = () =>
  new Errors.AuthRequired({
    message: "This session has ended (signed out, expired or revoked); sign in again, or send an API key."
  })

/** CSRF_REJECTED unless the request's Origin is the console's (the public base URL's origin, or the Host it was sent to). */
export const checkOrigin = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.flatMap(SessionCookie.SessionSettings, (settings) => {
    const origin = request.headers.origin
    const allowed = new URL(settings.publicBaseUrl).origin
    let sameHost = false
    try {
      sameHost = origin !== undefined && new URL(origin).host === request.headers.host
    } catch {
      sameHost = false
    }
    return origin === allowed || sameHost
      ? Effect.void
      : Effect.fail(
          new Errors.CsrfRejected({
            message: `This request needs the header Origin: ${allowed} (browsers send it on their own); it came with ${
              origin === undefined ? "none" : JSON.stringify(origin)
            }.`
          })
        )
  })

/** The live session of the request's cookie, CSRF-checked for unsafe methods. */
export const resolve = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function* () {
    const secret = SessionCookie.read(request)
    if (secret === undefined) {
      return yield* new Errors.AuthRequired({ message: "This endpoint needs a signed-in session; sign in first." })
    }
    const live = yield* (yield* Sessions.Sessions)
      .resolve(secret)
      .pipe(
        Effect.mapError(
          () => new Errors.AuthUnavailable({ message: "Authentication is temporarily unavailable; retry shortly." })
        )
      )
    if (live === undefined) return yield* ended()
    if (UNSAFE.has(request.method)) {
      yield* checkOrigin(request)
      if (request.headers[SessionCookie.CSRF_HEADER] !== live.csrfToken) {
        return yield* new Errors.CsrfRejected({
          message:
            "A request that changes something under a session needs the header X-CSRF-Token with the csrfToken " +
            "that sign-in and GET /api/v1/auth/session return."
        })
      }
    }
    return { secret, live }
  })

/** The caller a live session acts as. */
export const callerOf = (live: Sessions.LiveSession): Accounts.Caller => ({
  accountId: live.record.accountId,
  apiKeyId: null,
  scopes: Scope.all,
  keyUsageLimit: null
})
