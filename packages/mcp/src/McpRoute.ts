/**
 * The /mcp route: an OAuth 2.1 resource server in front of the MCP handler. The DNS-rebinding guard
 * (TransportGuard) runs first; then a request needs an access token issued for `<base>/mcp`, or an
 * API key (Bearer or `x-api-key`, read by PresentedCredential and checked as the API checks it). Without one: 401 with
 * `WWW-Authenticate: Bearer resource_metadata=..., scope=...` and the spec's `{ code, error }`; an
 * unreachable store is 503 AUTH_UNAVAILABLE. CORS without credentials for the allowed origins.
 */
import { Effect, Layer } from "effect"
import { HttpEffect, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Accounts, Errors, PresentedCredential } from "@taskmeter/kernel"
import { AuthorizationServer, mcpScopes } from "./AuthorizationServer.ts"
import { CALLER_KEY, McpHandler } from "./McpHandler.ts"
import * as TransportGuard from "./TransportGuard.ts"

const CORS = {
  "access-control-allow-origin": "*",
  "access-control-expose-headers": "www-authenticate, mcp-session-id, mcp-protocol-version"
} as const

const PREFLIGHT = {
  ...CORS,
  "access-control-allow-methods": "GET, POST, DELETE, OPTIONS",
  "access-control-allow-headers":
    "authorization, x-api-key, content-type, accept, last-event-id, mcp-protocol-version, mcp-session-id, mcp-method, mcp-name",
  "access-control-max-age": "86400"
} as const

const quoted = (value: string) => `"${value.replace(/["\\]/g, "")}"`

/** The route, with the guard's allowed origins and hosts besides the public ones. */
/** Where the MCP endpoint is served, under the public base URL. */
export const PATH = "/mcp"

export const layer = (
  options: TransportGuard.Options = {}
): Layer.Layer<never, never, HttpRouter.HttpRouter | AuthorizationServer | McpHandler | Accounts.Accounts> =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const router = yield* HttpRouter.HttpRouter
      const server = yield* AuthorizationServer
      const handler = yield* McpHandler
      const accounts = yield* Accounts.Accounts
      const { resource, resourceMetadataUrl } = server.settings
      const guard = TransportGuard.make(server.settings.issuer, options)

      const challenge = (error?: { readonly description: string }) =>
        [
          `Bearer resource_metadata=${quoted(resourceMetadataUrl)}`,
          `scope=${quoted(mcpScopes.join(" "))}`,
          ...(error === undefined ? [] : ['error="invalid_token"', `error_description=${quoted(error.description)}`])
        ].join(", ")

      // /mcp refuses only with 401, 403 and 503 (none carries Retry-After), so the spec's body and
      // status are all there is to it; the OAuth challenge header is what this route adds.
      const refuse = (error: Errors.ApiError, presented: boolean) =>
        HttpServerResponse.jsonUnsafe(Errors.errorBody(error), {
          status: error.status,
          headers: {
            ...CORS,
            ...(error.status === 401
              ? { "www-authenticate": challenge(presented ? { description: error.message } : undefined) }
              : {})
          }
        })

      /** The caller and the token's facts for the SDK, or the refusal to send. */
      const authenticate = (presented: PresentedCredential.PresentedCredential | undefined) =>
        Effect.gen(function* () {
          if (presented === undefined) {
            return yield* new Errors.AuthRequired({
              message: `Sign in with OAuth (see ${resourceMetadataUrl}), or send an API key as Authorization: Bearer <key> or x-api-key: <key>.`
            })
          }
          const token = presented.secret
          // x-api-key carries API keys only; OAuth access tokens come as Bearer tokens.
          if (token.startsWith(Accounts.KEY_PREFIX) || presented.header === PresentedCredential.API_KEY_HEADER) {
            const caller = yield* accounts.authenticate(token)
            return { token, clientId: "api-key", scopes: [...caller.scopes], caller }
          }
          const verified = yield* server.verify(token)
          return {
            token,
            clientId: verified.clientId,
            scopes: [...verified.scopes],
            caller: verified.caller,
            expiresAt: Math.floor(verified.expiresAt.getTime() / 1000)
          }
        })

      const serve = (request: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          const forbidden = guard.check({ origin: request.headers.origin, host: request.headers.host })
          if (forbidden !== undefined) {
            return HttpServerResponse.jsonUnsafe(Errors.errorBody(forbidden), { status: forbidden.status })
          }
          if (request.method === "OPTIONS") return HttpServerResponse.empty({ status: 204, headers: PREFLIGHT })
          const presented = PresentedCredential.fromHeaders(request.headers)
          const auth = yield* Effect.result(authenticate(presented))
          if (auth._tag === "Failure") {
            return refuse(
              auth.failure,
              request.headers.authorization !== undefined || request.headers[PresentedCredential.API_KEY_HEADER] !== undefined
            )
          }
          const { caller, ...facts } = auth.success
          const response = yield* HttpEffect.fromWebHandler((webRequest) =>
            handler.fetch(webRequest, {
              authInfo: {
                ...facts,
                resource: new URL(resource),
                resourceMetadataUrl,
                extra: { [CALLER_KEY]: caller }
              }
            })
          ).pipe(
            Effect.catchTag("HttpServerError", (error) =>
              Effect.as(
                Effect.logError("The MCP handler failed", error),
                refuse(
                  new Errors.ApiUnavailable({ message: "The MCP endpoint is temporarily unavailable; retry shortly." }),
                  false
                )
              )
            )
          )
          return HttpServerResponse.setHeaders(response, CORS)
        })

      yield* router.add("*", PATH, serve)
    })
  )
