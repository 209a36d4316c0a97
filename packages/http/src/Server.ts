/**
 * The HTTP server of the API on an `HttpRouter`: `layer` registers every endpoint of `Api`,
 * GET /api/openapi.json and its reference page at /docs (docs/ApiReference), the signed media and
 * result links and the health routes, with a router-wide middleware giving every error the spec's
 * `{ code, error }` (ErrorResponse) and every response the default headers (ResponseHeaders); other packages merge their route layers beside it (chat, MCP). `serve` runs it
 * with graceful shutdown. It takes the kernel services, MediaUrls and ResultUrls from its context.
 */
import { createServer } from "node:http"
import { Context, Deferred, Effect, Exit, identity, Layer, type Scope } from "effect"
import { HttpMiddleware, HttpRouter, HttpServer, type HttpServerRequest, HttpServerResponse } from "effect/http"
import type { IpNetwork } from "effect/net"
import { HttpApiBuilder } from "effect/http-api"
import { NodeHttpServer } from "@effect/platform-node"
import { Catalog } from "@taskmeter/kernel"
import { Api } from "./Api.ts"
import * as ApiReference from "./docs/ApiReference.ts"
import * as ErrorResponse from "./ErrorResponse.ts"
import * as AgentCodeHandlers from "./handlers/AgentCodeHandlers.ts"
import * as AuthHandlers from "./handlers/AuthHandlers.ts"
import * as EventStream from "./EventStream.ts"
import * as Authentication from "./handlers/Authentication.ts"
import * as CatalogHandlers from "./handlers/CatalogHandlers.ts"
import * as ErrorBoundary from "./handlers/ErrorBoundary.ts"
import * as Health from "./observability/Health.ts"
import * as Observed from "./observability/Observed.ts"
import * as JobsHandlers from "./handlers/JobsHandlers.ts"
import * as KeysHandlers from "./handlers/KeysHandlers.ts"
import * as MediaHandlers from "./handlers/MediaHandlers.ts"
import * as CallbackHandlers from "./handlers/CallbackHandlers.ts"
import * as MediaLinksHandlers from "./handlers/MediaLinksHandlers.ts"
import * as PasskeyHandlers from "./handlers/PasskeyHandlers.ts"
import * as PresentedKey from "./handlers/PresentedKey.ts"
import * as ResultLinksHandlers from "./handlers/ResultLinksHandlers.ts"
import * as ResultsHandlers from "./handlers/ResultsHandlers.ts"
import * as SessionAuthentication from "./handlers/SessionAuthentication.ts"
import * as UsageHandlers from "./handlers/UsageHandlers.ts"
import * as WebhooksHandlers from "./handlers/WebhooksHandlers.ts"
import * as OpenApiDocument from "./OpenApiDocument.ts"
import { PublicUrl } from "./PublicUrl.ts"
import * as ResponseHeaders from "./ResponseHeaders.ts"
import { ServerConfig } from "./ServerConfig.ts"

export const OPENAPI_PATH = "/api/openapi.json"

/** GET /api/openapi.json, built once for the catalog in force. */
const openApiRoute = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog.Catalog
    const publicUrl = yield* PublicUrl
    yield* router.add("GET", OPENAPI_PATH, HttpServerResponse.jsonUnsafe(OpenApiDocument.make(catalog.models, { publicUrl })))
  })
)

/**
 * Every error of every route as `{ code, error }`, including routes that do not exist, and
 * every response with the headers of ResponseHeaders (no-store, nosniff, the 401 challenge) and
 * the request's X-Request-Id (Observed).
 */
const errorShape = HttpRouter.middleware(
  (httpEffect): typeof httpEffect =>
    Effect.flatMap(Effect.catchCause(httpEffect, ErrorResponse.fromCause), (response) =>
      Observed.withRequestId(ResponseHeaders.withDefaults(response))
    ),
  { global: true }
)

const handlers = Layer.mergeAll(
  CatalogHandlers.layer,
  JobsHandlers.layer,
  MediaHandlers.layer,
  ResultsHandlers.layer,
  UsageHandlers.layer,
  AuthHandlers.layer,
  PasskeyHandlers.layer,
  AgentCodeHandlers.layer,
  KeysHandlers.layer,
  WebhooksHandlers.layer
).pipe(Layer.provide([Authentication.layer, PresentedKey.layer, SessionAuthentication.layer, ErrorBoundary.layer]))

/** The API's routes on the HttpRouter in context. */
export const layer = Layer.mergeAll(
  HttpApiBuilder.layer(Api).pipe(Layer.provide(handlers)),
  openApiRoute,
  ApiReference.layer(OPENAPI_PATH),
  Health.layer,
  MediaLinksHandlers.layer,
  ResultLinksHandlers.layer,
  CallbackHandlers.layer,
  errorShape
)

/**
 * Node's HTTP server on ServerConfig's host and port, listening once built. The HttpServer it
 * provides tells the bound address (useful with PORT=0), so that layers built over it can use
 * the address (main.ts takes the default public URL from it). It provides EventStream.Draining,
 * fired when the server starts closing, before it waits for the responses in flight.
 */
export const listen = Layer.unwrap(
  Effect.gen(function* () {
    const { host, port } = yield* ServerConfig
    const draining = Deferred.makeUnsafe<void>()
    const create = () => {
      const server = createServer()
      const close = server.close.bind(server)
      server.close = ((callback?: (error?: Error) => void) => {
        Deferred.doneUnsafe(draining, Exit.void)
        return close(callback)
      }) as typeof server.close
      return server
    }
    return Layer.merge(
      NodeHttpServer.layer(create, { port, host }),
      Layer.succeed(EventStream.Draining, Deferred.await(draining))
    )
  })
)

export interface ServeOptions {
  /** No log line per request. */
  readonly disableLogger?: boolean | undefined
  /**
   * Reverse proxies whose `X-Forwarded-For` (and `-Host`, `-Proto`) to believe: a request from
   * one of these networks is taken to come from the nearest untrusted address it names, which is
   * what per-client limits (MCP client registration) count. Empty: the socket's peer, always.
   */
  readonly trustedProxies?: ReadonlyArray<IpNetwork.IpNetwork> | undefined
  /** No "Listening on" log line. */
  readonly disableListenLog?: boolean | undefined
  /** Request ids, HTTP metrics and access lines (observability/Observed); none without. */
  readonly observed?: Observed.Options | undefined
}

/**
 * The options' middleware around the whole app: the observation outside the forwarded headers;
 * none when neither is asked for, so that each request takes the server's leanest path.
 */
const middlewareOf = (options: ServeOptions | undefined) => {
  const trusted = options?.trustedProxies !== undefined && options.trustedProxies.length > 0
  if (!trusted && options?.observed === undefined) return undefined
  const forwarded = trusted ? HttpMiddleware.xForwardedHeaders({ trustedProxies: options.trustedProxies! }) : identity
  const observed = options?.observed === undefined ? identity : Observed.middleware(options.observed)
  return <E, R>(
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> => observed(forwarded(app))
}

/** How many services a request's context adds before effect copies the server's whole service map. */
const REQUEST_CONTEXT_DEPTH = 16

/**
 * The HttpServer in context, its requests' contexts allowed REQUEST_CONTEXT_DEPTH additions: at
 * effect's default of 8, the router's additions after the server's and the middleware's copied the
 * map of every service on each request.
 */
const deepRequestContexts = Layer.effect(
  HttpServer.HttpServer,
  Effect.map(HttpServer.HttpServer, (server) =>
    HttpServer.make({
      address: server.address,
      serve: (app, middleware) =>
        Effect.updateContext(
          // The overload with a middleware cannot name what an untyped one requires: the server's own serve needs a Scope.
          (middleware === undefined ? server.serve(app) : server.serve(app, middleware)) as Effect.Effect<
            void,
            never,
            Scope.Scope
          >,
          (context: Context.Context<Scope.Scope>) =>
            Context.makeUnsafe<Scope.Scope>(context.mapUnsafe, { maxDepth: REQUEST_CONTEXT_DEPTH })
        )
    })
  )
)

/** Serves an app on the HttpServer in context (`listen`, or any other). */
export const serveOn = <E, R>(app: Layer.Layer<never, E, R>, options?: ServeOptions) => {
  const middleware = middlewareOf(options)
  return HttpRouter.serve(app, {
    ...(middleware === undefined ? {} : { middleware }),
    ...(options?.disableLogger === undefined ? {} : { disableLogger: options.disableLogger }),
    disableListenLog: options?.disableListenLog ?? false
  }).pipe(Layer.provide(deepRequestContexts))
}

/**
 * Serves an app (`layer`, merged with any other route layers) with Node on ServerConfig's host
 * and port: `serveOn` over `listen`, whose HttpServer it provides too.
 */
export const serve = <E, R>(app: Layer.Layer<never, E, R>, options?: ServeOptions) =>
  serveOn(app, options).pipe(Layer.provideMerge(listen))
