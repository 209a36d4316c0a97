/**
 * The console's only way to the server: the public API. JSON endpoints go through typed clients
 * derived from the API definition (`HttpApiClient` over `Api`, and over the chat and billing
 * groups, which the server serves as raw routes), so a response is decoded by the schema the server encodes it with; byte and
 * stream endpoints (upload, results, the chat stream) use `send`. Both carry the signed-in
 * credential: the session cookie (sent by the browser) with its CSRF token on unsafe methods, or
 * an API key as a Bearer token.
 */
import { Cause, Effect, Exit } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApi, HttpApiClient } from "effect/http-api"
import { Api, BillingApi, ChatApi } from "@taskmeter/http/Api"

export type Credential =
  | { readonly kind: "session"; readonly csrfToken: string }
  | { readonly kind: "key"; readonly secret: string }

let credential: Credential | undefined

export const setCredential = (next: Credential | undefined): void => {
  credential = next
}

const SAFE = new Set(["GET", "HEAD", "OPTIONS"])

/** The credential's headers for a request of `method`. */
const credentialHeaders = (method: string): Record<string, string> => {
  if (credential === undefined) return {}
  if (credential.kind === "key") return { authorization: `Bearer ${credential.secret}` }
  return SAFE.has(method.toUpperCase()) ? {} : { "x-csrf-token": credential.csrfToken }
}

/** An answer other than success: the API's `{ code, error }`, or what went wrong on the way. */
export class ApiFailure extends Error {
  readonly code: string
  readonly status: number | undefined
  constructor(code: string, message: string, status?: number) {
    super(message)
    this.code = code
    this.status = status
  }
}

const ChatHistoryApi = HttpApi.make("chat").add(ChatApi)
const TopUpApi = HttpApi.make("billing").add(BillingApi)

const makeClients = Effect.gen(function* () {
  const options = {
    baseUrl: location.origin,
    transformClient: HttpClient.mapRequest((request: HttpClientRequest.HttpClientRequest) =>
      HttpClientRequest.setHeaders(request, credentialHeaders(request.method))
    )
  }
  return {
    api: yield* HttpApiClient.make(Api, options),
    chat: yield* HttpApiClient.make(ChatHistoryApi, options),
    billing: yield* HttpApiClient.make(TopUpApi, options)
  }
}).pipe(Effect.provide(FetchHttpClient.layer))

export type Clients = Effect.Success<typeof makeClients>

let clients: Promise<Clients> | undefined

const failureOf = (error: unknown): ApiFailure => {
  if (error instanceof ApiFailure) return error
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
    return new ApiFailure(error.code, error instanceof Error ? error.message : String(error))
  }
  return new ApiFailure("NETWORK", error instanceof Error ? error.message : "The server could not be reached.")
}

/** Runs one call of the typed clients; fails with an ApiFailure. */
export const call = async <A, E>(use: (clients: Clients) => Effect.Effect<A, E>): Promise<A> => {
  clients ??= Effect.runPromise(makeClients)
  const exit = await Effect.runPromiseExit(use(await clients))
  if (Exit.isSuccess(exit)) return exit.value
  throw failureOf(Cause.squash(exit.cause))
}

/** fetch with the credential; a non-2xx answer fails with its `{ code, error }`. */
export const send = async (path: string, init: RequestInit = {}): Promise<Response> => {
  const method = init.method ?? "GET"
  const headers = { ...credentialHeaders(method), ...(init.headers as Record<string, string> | undefined) }
  let response: Response
  try {
    response = await fetch(path, { ...init, headers, credentials: "same-origin" })
  } catch (error) {
    throw failureOf(error)
  }
  if (response.ok) return response
  const body = (await response.json().catch(() => undefined)) as { code?: string; error?: string } | undefined
  throw new ApiFailure(body?.code ?? `HTTP_${response.status}`, body?.error ?? response.statusText, response.status)
}

/** The credential in force (for pages that show or adapt to it). */
export const currentCredential = (): Credential | undefined => credential
