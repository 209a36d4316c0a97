/**
 * Serves the admin RPC service at `POST /admin/rpc` on the server's HttpRouter, beside the
 * public API. Every request must carry `Authorization: Bearer <operator token>`; without it,
 * or with another token, the answer is 401 with the spec's body
 * `{ code: "AUTH_REQUIRED", error }` and the body is not read.
 *
 * @example
 * ```ts
 * const Admin = AdminServer.layer({ token })
 * // Layer<never, never, HttpRouter | Accounts | Ledger | Pricer | TaskStore | OAuthStore>
 * ```
 */
import { Effect, Layer, type Redacted } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { RpcSerialization, RpcServer } from "effect/rpc"
import { Errors } from "@taskmeter/kernel"
import * as AdminHandlers from "./AdminHandlers.ts"
import { AdminRpcs } from "./AdminRpc.ts"
import * as OperatorToken from "./OperatorToken.ts"

export const PATH = "/admin/rpc"

const unauthorized = HttpServerResponse.jsonUnsafe(
  Errors.errorBody(
    new Errors.AuthRequired({
      message: "The admin service needs the operator token: Authorization: Bearer <token> (see <DATA_DIR>/admin.json)."
    })
  ),
  { status: 401, headers: { "www-authenticate": "Bearer" } }
)

export interface Options {
  readonly token: Redacted.Redacted<string>
}

export const layer = (options: Options) =>
  HttpRouter.use((router) =>
    Effect.gen(function*() {
      const serve = yield* RpcServer.toHttpEffect(AdminRpcs)
      const verify = OperatorToken.verifier(options.token)
      yield* router.add(
        "POST",
        PATH,
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          return verify(OperatorToken.fromAuthorization(request.headers.authorization)) ? yield* serve : unauthorized
        })
      )
    })
  ).pipe(
    Layer.provide([AdminHandlers.layer, RpcSerialization.layerJson])
  )
