/**
 * Client ID Metadata Documents: an https `client_id` URL (normalised, with a path, no credentials,
 * fragment or dot segments) whose document is the client's metadata, fetched when a sign-in starts
 * through the kernel's `PublicFetch` (port 443, public addresses, pinned, no redirects, bounded,
 * JSON only). Every fetch failure answers the same `could not be fetched`, the reason logged. For
 * tests, `allowHttpLoopback` admits `http://127.0.0.1:<port>/...` and `resolve` replaces the resolver.
 */
import { AddressPolicy, PublicFetch } from "@taskmeter/kernel"
import { Effect, Result } from "effect"
import * as ClientMetadata from "./ClientMetadata.ts"
import { oauthError } from "./OAuthError.ts"
import type { OAuthError } from "./OAuthError.ts"

/** Every address of a host name (both families); rejects when there is none. */
export type Resolve = AddressPolicy.Resolve

/** The system's resolver (getaddrinfo, as connections use it). */
export const systemResolve: Resolve = AddressPolicy.systemResolve

export interface Options {
  readonly timeoutMs: number
  readonly maxBytes: number
  readonly allowHttpLoopback: boolean
  readonly resolve: Resolve
}

export const defaults: Options = { timeoutMs: 5_000, maxBytes: 16 * 1024, allowHttpLoopback: false, resolve: systemResolve }

/** Whether a client_id names a metadata document rather than a registered client. */
export const isDocumentClientId = (clientId: string): boolean => /^https?:\/\//i.test(clientId)

/** What is wrong with a client_id URL, or undefined when it may be fetched. */
export const urlProblem = (clientId: string, options: Pick<Options, "allowHttpLoopback">): string | undefined => {
  let url: URL
  try {
    url = new URL(clientId)
  } catch {
    return "is not a URL"
  }
  if (url.href !== clientId)
    return "must be written in normalised form (lower-case scheme and host, no default port, no dot segments)"
  if (url.username !== "" || url.password !== "" || url.hash !== "") return "must not carry credentials or a fragment"
  if (url.pathname === "/" || url.pathname === "") return "must have a path"
  if (url.protocol === "http:" && options.allowHttpLoopback && ClientMetadata.isLoopbackHost(url.hostname)) return undefined
  if (url.protocol !== "https:") return "must be an https URL"
  if (url.port !== "") return "must be on port 443 (no other port)"
  if (AddressPolicy.hostProblem(url.hostname) !== undefined) return "must name a public host"
  return undefined
}

/** The body as UTF-8 text, or undefined past `maxBytes` (the rest is not read). */
const readCapped = async (response: Response, maxBytes: number): Promise<string | undefined> => {
  const declared = Number(response.headers.get("content-length") ?? NaN)
  if (declared > maxBytes) return undefined
  if (response.body === null) return ""
  const chunks: Array<Uint8Array> = []
  let size = 0
  for await (const chunk of response.body) {
    size += chunk.byteLength
    if (size > maxBytes) return undefined
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString("utf8")
}

/** Why a fetch failed; logged, never shown to the caller. */
class FetchProblem extends Error {}

/** The document's JSON, or a `FetchProblem` saying why it could not be had. */
const fetchJson = (clientId: string, options: Options): Effect.Effect<unknown, FetchProblem> => {
  const url = new URL(clientId)
  const policy: AddressPolicy.Policy = {
    resolve: options.resolve,
    // urlProblem admits http only for a loopback host, and only under allowHttpLoopback.
    allowLoopbackForTests: options.allowHttpLoopback && url.protocol === "http:"
  }
  return Effect.gen(function* () {
    const response = yield* PublicFetch.get(clientId, {
      ports: url.protocol === "https:" ? [443] : undefined,
      headers: { accept: "application/json" }
    })
    if (response.status !== 200) return yield* Effect.fail(new FetchProblem(`answered HTTP ${response.status}`))
    const type = response.headers.get("content-type") ?? ""
    if (!/^application\/([\w.+-]+\+)?json\b/i.test(type))
      return yield* Effect.fail(new FetchProblem(`is served as ${type || "no type"}`))
    const text = yield* Effect.tryPromise({
      try: () => readCapped(response, options.maxBytes),
      catch: (error) => new FetchProblem(`could not be read: ${String(error)}`)
    })
    if (text === undefined) return yield* Effect.fail(new FetchProblem(`is larger than ${options.maxBytes} bytes`))
    return yield* Effect.try({ try: () => JSON.parse(text) as unknown, catch: () => new FetchProblem("is not valid JSON") })
  }).pipe(
    Effect.scoped,
    Effect.provideService(AddressPolicy.AddressPolicy, policy),
    Effect.mapError((error) => (error instanceof FetchProblem ? error : new FetchProblem(error.message))),
    Effect.timeoutOrElse({
      duration: options.timeoutMs,
      orElse: () => Effect.fail(new FetchProblem(`took longer than ${options.timeoutMs} ms`))
    })
  )
}

/**
 * Fetches and checks the client's metadata document. A client_id that cannot be used, a
 * document that cannot be fetched (one message whatever the reason) or that does not pass is
 * `invalid_client`, described.
 */
export const fetchClient = (clientId: string, options: Options): Effect.Effect<ClientMetadata.ClientMetadata, OAuthError> => {
  const problem = urlProblem(clientId, options)
  if (problem !== undefined) return Effect.fail(oauthError("invalid_client", `client_id ${problem}`))
  return fetchJson(clientId, options).pipe(
    Effect.tapError((error) => Effect.logWarning(`The client's metadata document at ${clientId} ${error.message}`)),
    Effect.mapError(() => oauthError("invalid_client", `The client's metadata document at ${clientId} could not be fetched.`)),
    Effect.flatMap((json) =>
      Effect.fromResult(
        Result.mapError(ClientMetadata.parse(json, clientId), (error) =>
          oauthError("invalid_client", `The client's metadata document is not usable: ${error.description}`)
        )
      )
    )
  )
}
