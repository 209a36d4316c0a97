/**
 * Serves the admin RPC service at `POST /admin/rpc` on a listener of its own (ADMIN_HOST and
 * ADMIN_PORT, loopback by default), never on the public port. Every request needs `Authorization:
 * Bearer <operator token>`, else 401 AUTH_REQUIRED with the body unread; a body that is not JSON or
 * holds a string no store can hold is 400 INVALID_REQUEST; any other method or path is 404
 * NOT_FOUND. `GET /metrics` serves Prometheus text, behind METRICS_TOKEN when one is set (never
 * the operator token: a scraper gets no admin rights). `AdminListener` tells the bound address.
 */
import { createServer } from "node:http"
import { Context, Data, Effect, Layer, type Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import type { NetAddress } from "effect/net"
import { RpcSerialization, RpcServer } from "effect/rpc"
import { NodeHttpServer } from "@effect/platform-node"
import { Errors, StorableText } from "@taskmeter/kernel"
import * as ErrorResponse from "../ErrorResponse.ts"
import * as MetricsScrape from "../observability/MetricsScrape.ts"
import * as ResponseHeaders from "../ResponseHeaders.ts"
import { ServerConfig } from "../ServerConfig.ts"
import * as AdminHandlers from "./AdminHandlers.ts"
import { AdminRpcs, PATH } from "./AdminRpc.ts"
import * as OperatorToken from "./OperatorToken.ts"

export { PATH }

const unauthorized = ErrorResponse.fromError(
  new Errors.AuthRequired({
    message: "The admin service needs the operator token: Authorization: Bearer <token> (see <DATA_DIR>/admin.json)."
  }),
  { headers: { "www-authenticate": ResponseHeaders.BEARER_CHALLENGE } }
)

/**
 * Why a body is refused before effect/rpc reads it (which would answer a Defect carrying the
 * parser's exception): not JSON, not a request message (an object) or a batch of them (an
 * array), or holding a string no store keeps (U+0000, an unpaired surrogate), named by its path
 * as everywhere else. The body is read once: effect/rpc reads the same cached bytes.
 */
export const bodyRefusal = (text: string): Errors.InvalidRequest | undefined => {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (cause) {
    return new Errors.InvalidRequest({
      message: `The body is not JSON (${cause instanceof Error ? cause.message : String(cause)}); send effect/rpc request messages as JSON, as the taskmeter admin CLI does.`
    })
  }
  if (typeof parsed !== "object" || parsed === null) {
    return new Errors.InvalidRequest({
      message: "The body must be an effect/rpc request message (a JSON object) or an array of them."
    })
  }
  const unstorable = StorableText.findUnstorable(parsed, "body")
  return unstorable === undefined ? undefined : new Errors.InvalidRequest({ message: StorableText.describe(unstorable) })
}

/** The admin listener could not listen (the port is taken, most often by another process on this host). */
export class AdminListenError extends Data.TaggedError("AdminListenError")<{
  readonly message: string
  readonly cause: unknown
}> {}

const codeOf = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : String(cause)

/** The admin listener, once it listens. */
export class AdminListener extends Context.Service<
  AdminListener,
  {
    readonly address: NetAddress.SocketAddress
  }
>()("@taskmeter/http/AdminListener") {}

export interface Options {
  readonly token: Redacted.Redacted<string>
  /** METRICS_TOKEN: what a scraper presents as `Authorization: Bearer`; none: /metrics is open on this listener. */
  readonly metricsToken?: Redacted.Redacted<string> | undefined
}

/** The admin service on its own HTTP server, listening on ADMIN_HOST:ADMIN_PORT until the layer is released. */
export const layer = (options: Options) =>
  Layer.effect(
    AdminListener,
    Effect.gen(function* () {
      const { adminHost, adminPort } = yield* ServerConfig
      const serve = yield* RpcServer.toHttpEffect(AdminRpcs)
      const verify = OperatorToken.verifier(options.token)
      const metrics = yield* MetricsScrape.handler(options.metricsToken)
      const handler = Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        // RpcClient posts to `<PATH>/`; the router this replaced ignored a trailing slash too.
        const path = request.url.split("?")[0]!.replace(/(.)\/$/, "$1")
        if (request.method === "GET" && path === MetricsScrape.PATH) return yield* metrics(request)
        if (request.method !== "POST" || path !== PATH) {
          return ErrorResponse.routeNotFound(request.method, request.url)
        }
        if (!verify(OperatorToken.fromAuthorization(request.headers.authorization))) return unauthorized
        const refusal = bodyRefusal(yield* request.text)
        return refusal === undefined ? yield* serve : ErrorResponse.fromError(refusal)
      }).pipe(Effect.catchCause(ErrorResponse.fromCause), Effect.map(ResponseHeaders.withDefaults))
      const server = yield* NodeHttpServer.make(createServer, { host: adminHost, port: adminPort }).pipe(
        Effect.mapError(
          (error) =>
            new AdminListenError({
              message:
                `The admin service cannot listen on ${adminHost}:${adminPort} (${codeOf(error.cause)}): ` +
                "each server process has its own admin listener, so give processes on one host different ADMIN_PORTs, " +
                "or ADMIN_PORT=0 (a free port, written to admin.json).",
              cause: error.cause
            })
        )
      )
      yield* server.serve(handler)
      return AdminListener.of({ address: server.address })
    })
  ).pipe(Layer.provide([AdminHandlers.layer, RpcSerialization.layerJson]))
