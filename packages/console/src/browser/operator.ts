/**
 * The operator pages' way to the admin service: effect's RpcClient over the admin procedures
 * (`@taskmeter/http/AdminRpc`) at POST /api/v1/operator/rpc, under the session cookie with its
 * CSRF token, so answers are decoded by the admin service's own schemas. A refusal is an
 * ApiFailure: the server's `{ code, error }` (403 for a user who is not an operator), or the
 * procedure's AdminError reason and message.
 */
import { Cause, Effect, Exit, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import { RpcClient, RpcSerialization } from "effect/rpc"
import type { RpcClientError } from "effect/rpc/RpcClientError"
import { AdminRpcs, OPERATOR_PATH } from "@taskmeter/http/AdminRpc"
import { ApiFailure, currentCredential } from "./api.ts"

export type OperatorClient = RpcClient.FromGroup<typeof AdminRpcs, RpcClientError>

/** Fetch with the session's CSRF token; a non-2xx answer throws the server's `{ code, error }` as an ApiFailure. */
const fetchOperator: typeof fetch = async (input, init) => {
  const credential = currentCredential()
  const headers = new Headers(init?.headers)
  if (credential?.kind === "session") headers.set("x-csrf-token", credential.csrfToken)
  const response = await fetch(input, { ...init, headers, credentials: "same-origin" })
  if (response.ok) return response
  const body = (await response.json().catch(() => ({}))) as { code?: string; error?: string }
  throw new ApiFailure(body.code ?? `HTTP_${response.status}`, body.error ?? response.statusText, response.status)
}

const http = Layer.merge(FetchHttpClient.layer, Layer.succeed(FetchHttpClient.Fetch, fetchOperator))

/** The ApiFailure a fetch threw, found through the client errors that wrap it (reason, cause). */
const thrownFailure = (error: unknown, depth = 0): ApiFailure | undefined => {
  if (error instanceof ApiFailure) return error
  if (typeof error !== "object" || error === null || depth > 4) return undefined
  const { reason, cause } = error as { reason?: unknown; cause?: unknown }
  return thrownFailure(reason, depth + 1) ?? thrownFailure(cause, depth + 1)
}

const failureOf = (error: unknown): ApiFailure => {
  if (typeof error === "object" && error !== null && "_tag" in error && error._tag === "AdminError") {
    const { reason, message } = error as unknown as { reason: string; message: string }
    return new ApiFailure(reason, message)
  }
  return (
    thrownFailure(error) ?? new ApiFailure("NETWORK", error instanceof Error ? error.message : "The server could not be reached.")
  )
}

/** Runs one use of the operator client; fails with an ApiFailure. */
export const operator = async <A, E>(use: (client: OperatorClient) => Effect.Effect<A, E>): Promise<A> => {
  const exit = await Effect.runPromiseExit(
    Effect.flatMap(RpcClient.make(AdminRpcs), use).pipe(
      Effect.provide(RpcClient.layerProtocolHttp({ url: `${location.origin}${OPERATOR_PATH}` })),
      Effect.provide([RpcSerialization.layerJson, http]),
      Effect.scoped
    )
  )
  if (Exit.isSuccess(exit)) return exit.value
  throw failureOf(Cause.squash(exit.cause))
}
