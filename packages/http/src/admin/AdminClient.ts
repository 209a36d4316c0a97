/**
 * A client of the admin RPC service, as the `taskmeter admin` CLI uses it: every AdminRpc procedure
 * as a method over HTTP, with the operator token as a bearer token. A refusal before the RPC layer
 * (401, or 404 from an address that is not the admin service) is an RpcClientError whose reason is
 * an `HttpError` of kind `StatusCodeError`; `statusOf` reads its status.
 */
import { Context, Effect, Layer, Redacted } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { RpcClient, RpcSerialization } from "effect/rpc"
import type { RpcClientError } from "effect/rpc/RpcClientError"
import { AdminRpcs, PATH } from "./AdminRpc.ts"

export class AdminClient extends Context.Service<AdminClient, RpcClient.FromGroup<typeof AdminRpcs, RpcClientError>>()(
  "@taskmeter/http/AdminClient"
) {}

export interface Options {
  /** The admin listener's address (ADMIN_HOST:ADMIN_PORT), e.g. http://127.0.0.1:8788. */
  readonly url: string
  readonly token: Redacted.Redacted<string>
}

/** Fetch, with the operator token on every request and any non-2xx answer made an error. */
const httpClient = (token: Redacted.Redacted<string>) =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(HttpClient.HttpClient, (client) =>
      client.pipe(HttpClient.mapRequest(HttpClientRequest.bearerToken(Redacted.value(token))), HttpClient.filterStatusOk)
    )
  ).pipe(Layer.provide(FetchHttpClient.layer))

export const layer = (options: Options): Layer.Layer<AdminClient> =>
  Layer.effect(AdminClient, RpcClient.make(AdminRpcs)).pipe(
    Layer.provide(RpcClient.layerProtocolHttp({ url: new URL(PATH, options.url).href })),
    Layer.provide([RpcSerialization.layerJson, httpClient(options.token)])
  )

/** The HTTP status of a refusal that came before the RPC layer, if that is what `error` is. */
export const statusOf = (error: RpcClientError): number | undefined => {
  const reason = error.reason
  if (reason._tag !== "HttpError" || reason.kind !== "StatusCodeError") return undefined
  const cause = reason.cause
  return typeof cause === "object" &&
    cause !== null &&
    "response" in cause &&
    typeof cause.response === "object" &&
    cause.response !== null &&
    "status" in cause.response &&
    typeof cause.response.status === "number"
    ? cause.response.status
    : undefined
}
