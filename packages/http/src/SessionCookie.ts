/**
 * The console's session cookie `taskmeter_session`: HttpOnly, SameSite=Lax, Path=/, and Secure
 * when the public base URL is https; its lifetime is the session's absolute one. `SessionSettings`
 * holds what the server needs to set it and to judge a request's Origin (CSRF).
 */
import { Context, Duration, Effect, Layer } from "effect"
import { HttpEffect, HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http"

export const SESSION_COOKIE = "taskmeter_session"
export const CSRF_HEADER = "x-csrf-token"

export interface Settings {
  /** Where the console is served (PUBLIC_URL, else the bound address). */
  readonly publicBaseUrl: string
  /** How long the cookie lives: the session's absolute lifetime. */
  readonly maxAgeMs: number
}

export class SessionSettings extends Context.Service<SessionSettings, Settings>()("@taskmeter/http/SessionSettings") {}

export const layer = (settings: Settings): Layer.Layer<SessionSettings> => Layer.succeed(SessionSettings, settings)

const optionsOf = (settings: Settings) => ({
  httpOnly: true,
  sameSite: "lax" as const,
  path: "/",
  secure: new URL(settings.publicBaseUrl).protocol === "https:"
})

/** The session secret the request's cookie holds, if any. */
export const read = (request: HttpServerRequest.HttpServerRequest): string | undefined => request.cookies[SESSION_COOKIE]

/** Sets the cookie to `secret` on the response of the current request. */
export const set = (secret: string) =>
  Effect.flatMap(SessionSettings, (settings) =>
    HttpEffect.appendPreResponseHandler((_request, response) =>
      Effect.orDie(
        HttpServerResponse.setCookie(response, SESSION_COOKIE, secret, {
          ...optionsOf(settings),
          maxAge: Duration.millis(settings.maxAgeMs)
        })
      )
    )
  )

/** Expires the cookie on the response of the current request. */
export const clear = Effect.flatMap(SessionSettings, (settings) =>
  HttpEffect.appendPreResponseHandler((_request, response) =>
    Effect.orDie(HttpServerResponse.expireCookie(response, SESSION_COOKIE, optionsOf(settings)))
  )
)
