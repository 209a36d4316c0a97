/**
 * The admin service for operators signed in to the console: `POST /api/v1/operator/rpc` on the
 * public listener serves the procedures of `OPERATOR_PROCEDURES` with the admin listener's own
 * handlers (AdminHandlers), in the same effect/rpc JSON protocol. Only a console session whose user
 * is marked operator may call it: an API key (or any Authorization header) or a session of another
 * user is 403 PERMISSION_DENIED, no session 401 AUTH_REQUIRED, and the session's CSRF check
 * (Origin and X-CSRF-Token) applies as on every unsafe request. A request naming another
 * procedure is 403 before anything runs, and a body past 256 KB is 413 INPUT_TOO_LARGE before it is
 * read whole. Each call is logged with the operator's user id.
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { RpcSerialization, RpcServer } from "effect/rpc"
import { Errors, PresentedCredential } from "@taskmeter/kernel"
import * as ErrorResponse from "../ErrorResponse.ts"
import * as JsonBody from "../JsonBody.ts"
import * as SessionCredential from "../handlers/SessionCredential.ts"
import * as AdminHandlers from "./AdminHandlers.ts"
import { AdminRpcs, OPERATOR_PATH, OPERATOR_PROCEDURES } from "./AdminRpc.ts"
import { bodyRefusal } from "./AdminServer.ts"

const allowed: ReadonlySet<string> = new Set(OPERATOR_PROCEDURES)

const denied = (message: string) => new Errors.PermissionDenied({ message })

/** The procedures a body asks for (effect/rpc request messages carry `tag`). */
const requestedTags = (text: string): ReadonlyArray<string> => {
  const parsed: unknown = JSON.parse(text)
  const messages: ReadonlyArray<unknown> = Array.isArray(parsed) ? parsed : [parsed]
  return messages.flatMap((message) =>
    typeof message === "object" && message !== null && "_tag" in message && message._tag === "Request"
      ? [String((message as { tag?: unknown }).tag)]
      : []
  )
}

export const layer = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const serve = yield* RpcServer.toHttpEffect(AdminRpcs)
    const handler = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (request.headers.authorization !== undefined || request.headers[PresentedCredential.API_KEY_HEADER] !== undefined) {
        return yield* denied("The operator service takes a console session of an operator, never an API key.")
      }
      const { live } = yield* SessionCredential.resolve(request)
      if (!live.user.operator) {
        return yield* denied("Only users marked as operators (taskmeter admin operator add EMAIL) may use the operator service.")
      }
      // The body is read once here under the bound; the rpc server below reads the same cached bytes.
      const text = new TextDecoder().decode(yield* JsonBody.readLimited(request, JsonBody.MAX_JSON_BODY_BYTES))
      const refusal = bodyRefusal(text)
      if (refusal !== undefined) return ErrorResponse.fromError(refusal)
      const tags = requestedTags(text)
      const refused = tags.find((tag) => !allowed.has(tag))
      if (refused !== undefined) {
        return yield* denied(`The console's operator service does not offer ${JSON.stringify(refused)}; use the admin CLI.`)
      }
      yield* Effect.logInfo("operator procedure").pipe(
        Effect.annotateLogs({ operatorUserId: live.user.id, procedures: tags.join(",") })
      )
      return yield* serve
    })
    yield* router.add("POST", OPERATOR_PATH, handler)
  })
).pipe(Layer.provide([AdminHandlers.layer, RpcSerialization.layerJson]))
