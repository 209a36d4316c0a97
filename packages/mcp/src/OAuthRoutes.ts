/**
 * The HTTP face of the authorization server, added to the service's HttpRouter: the RFC 9728
 * protected-resource documents (at `/mcp`'s path and the root), RFC 8414 metadata, GET/POST
 * /authorize (the sign-in page), POST /token, /register, /revoke. /register and /authorize are
 * limited per client address (429 with Retry-After). Discovery and machine endpoints answer any
 * origin (CORS, no credentials); the sign-in page is a same-origin form.
 */
import { ByteSize, Effect, Layer, Option } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import * as AuthorizationServer from "./AuthorizationServer.ts"
import type { OAuthError } from "./OAuthError.ts"
import { oauthError } from "./OAuthError.ts"
import * as SignInPage from "./SignInPage.ts"

export const CORS_HEADERS = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, POST, OPTIONS",
  "access-control-allow-headers": "authorization, content-type, mcp-protocol-version",
  "access-control-max-age": "86400"
} as const

const MAX_BODY = ByteSize.kilobytes(64)

const json = (body: unknown, status = 200, headers: { readonly [name: string]: string } = {}) =>
  HttpServerResponse.jsonUnsafe(body, {
    status,
    headers: { ...CORS_HEADERS, "cache-control": "no-store", pragma: "no-cache", ...headers }
  })

const metadataDocument = (body: unknown) =>
  HttpServerResponse.jsonUnsafe(body, { headers: { ...CORS_HEADERS, "cache-control": "public, max-age=300" } })

const preflight = HttpServerResponse.empty({ status: 204, headers: CORS_HEADERS })

const oauthFailure = (error: OAuthError) =>
  json(error.body, error.status, {
    ...(error.error === "invalid_client" ? { "www-authenticate": 'Basic realm="taskmeter"' } : {}),
    // Retry-After is not a CORS-safelisted header: browser clients read it only when exposed.
    ...(error.retryAfterSeconds === undefined
      ? {}
      : { "retry-after": String(error.retryAfterSeconds), "access-control-expose-headers": "retry-after" })
  })

/** The body of a form-encoded POST, or an invalid_request naming what is wrong. */
const formBody = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
  if (type !== "application/x-www-form-urlencoded") {
    return yield* Effect.fail(oauthError("invalid_request", "Send the parameters as application/x-www-form-urlencoded."))
  }
  const text = yield* Effect.mapError(request.text, () =>
    oauthError("invalid_request", "The request body could not be read (at most 64 KB).")
  )
  return new URLSearchParams(text)
}).pipe(Effect.provideService(HttpIncomingMessage.MaxBodySize, MAX_BODY))

/** The body of a JSON POST (RFC 7591 §3.1: registration is application/json), or invalid_client_metadata. */
const jsonBody = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
  if (type !== "application/json") {
    return yield* Effect.fail(
      oauthError(
        "invalid_client_metadata",
        `Send the client metadata as a JSON object with Content-Type: application/json${type === "" ? "" : ` (not ${type})`}.`
      )
    )
  }
  const text = yield* Effect.mapError(request.text, () =>
    oauthError("invalid_client_metadata", "The request body could not be read (at most 64 KB).")
  )
  try {
    return JSON.parse(text) as unknown
  } catch {
    return yield* Effect.fail(oauthError("invalid_client_metadata", "The body must be a JSON object of client metadata."))
  }
}).pipe(Effect.provideService(HttpIncomingMessage.MaxBodySize, MAX_BODY))

const cookieName = (pendingId: string) => `tm_signin_${pendingId.replace(/-/g, "")}`

export const layer: Layer.Layer<never, never, HttpRouter.HttpRouter | AuthorizationServer.AuthorizationServer> =
  Layer.effectDiscard(
    Effect.gen(function* () {
      const router = yield* HttpRouter.HttpRouter
      const server = yield* AuthorizationServer.AuthorizationServer
      const s = server.settings
      const secureCookie = s.issuer.startsWith("https:")

      const page = (outcome: AuthorizationServer.AuthorizeOutcome) => {
        switch (outcome._tag) {
          case "SignIn": {
            const response = HttpServerResponse.text(SignInPage.signIn(outcome.view, s.issuer), {
              status: outcome.status,
              contentType: "text/html; charset=utf-8",
              headers: SignInPage.headers([SignInPage.formTargetOf(outcome.view.redirectUri)])
            })
            return HttpServerResponse.setCookieUnsafe(response, cookieName(outcome.view.pendingId), outcome.view.csrfToken, {
              httpOnly: true,
              secure: secureCookie,
              sameSite: "strict",
              path: "/authorize",
              maxAge: `${Math.max(1, Math.ceil((outcome.view.expiresAt.getTime() - Date.now()) / 1000))} seconds`
            })
          }
          case "Redirect": {
            const response = HttpServerResponse.redirect(outcome.location, { status: 303, headers: SignInPage.headers() })
            return outcome.endsSignIn === undefined
              ? response
              : HttpServerResponse.expireCookieUnsafe(response, cookieName(outcome.endsSignIn), { path: "/authorize" })
          }
          case "Problem":
            return HttpServerResponse.text(SignInPage.problem(outcome.title, outcome.detail, s.issuer), {
              status: outcome.status,
              contentType: "text/html; charset=utf-8",
              headers: {
                ...SignInPage.headers(),
                ...(outcome.retryAfterSeconds === undefined ? {} : { "retry-after": String(outcome.retryAfterSeconds) })
              }
            })
        }
      }

      const resourceMetadata = metadataDocument(AuthorizationServer.protectedResourceMetadata(s))
      for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] as const) {
        yield* router.add("GET", path, resourceMetadata)
        yield* router.add("OPTIONS", path, preflight)
      }
      yield* router.add(
        "GET",
        "/.well-known/oauth-authorization-server",
        metadataDocument(AuthorizationServer.authorizationServerMetadata(s))
      )
      yield* router.add("OPTIONS", "/.well-known/oauth-authorization-server", preflight)

      /** The outcome, unless the request is over the /authorize limit of its address. */
      const limited = <R>(
        request: HttpServerRequest.HttpServerRequest,
        outcome: Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>
      ) =>
        Effect.flatMap(server.admitAuthorize(Option.getOrUndefined(request.remoteAddress)), (refusal) =>
          refusal === undefined ? outcome : Effect.succeed(page(refusal))
        )

      yield* router.add("GET", "/authorize", (request) =>
        limited(
          request,
          Effect.suspend(() => {
            const url = new URL(request.url, s.issuer)
            return Effect.map(server.authorize(url.searchParams, url.search), page)
          })
        )
      )

      yield* router.add("POST", "/authorize", (request) =>
        limited(
          request,
          formBody.pipe(
            Effect.flatMap((form) =>
              server.decide({
                pendingId: form.get("pending") ?? "",
                csrfToken: form.get("csrf") ?? "",
                cookieToken: request.cookies[cookieName(form.get("pending") ?? "")],
                credential: form.get("credential") ?? "",
                approve: form.get("decision") === "approve"
              })
            ),
            Effect.map(page),
            Effect.catchTag("OAuthError", (error) =>
              Effect.succeed(
                page({ _tag: "Problem", status: 400, title: "This sign-in could not be read", detail: error.description })
              )
            )
          )
        )
      )

      yield* router.add("POST", "/token", (request) =>
        formBody.pipe(
          Effect.flatMap((form) => server.token(form, request.headers.authorization)),
          Effect.map((tokens) => json(tokens)),
          Effect.catchTag("OAuthError", (error) => Effect.succeed(oauthFailure(error)))
        )
      )

      yield* router.add("POST", "/register", (request) =>
        jsonBody.pipe(
          Effect.flatMap((body) => server.register(body, Option.getOrUndefined(request.remoteAddress))),
          Effect.map((registration) => json(registration, 201)),
          Effect.catchTag("OAuthError", (error) => Effect.succeed(oauthFailure(error)))
        )
      )

      yield* router.add("POST", "/revoke", (request) =>
        formBody.pipe(
          Effect.flatMap((form) => server.revoke(form, request.headers.authorization)),
          Effect.map(() => json({})),
          Effect.catchTag("OAuthError", (error) => Effect.succeed(oauthFailure(error)))
        )
      )

      for (const path of ["/token", "/register", "/revoke"] as const) {
        yield* router.add("OPTIONS", path, preflight)
      }
    })
  )
