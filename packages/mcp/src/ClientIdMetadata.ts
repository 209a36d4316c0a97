/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, the MCP
 * authorization spec's preferred way for a client to identify itself): the `client_id` is an
 * https URL, and the document it serves is the client's metadata. The authorization server
 * fetches it when a sign-in starts.
 *
 * Fetching a URL a stranger chose is a server-side request (SSRF): it is bounded (one timeout
 * over resolution, connection and body, a size cap, no redirects, JSON only), and the URL must
 * be https with a path, without credentials, fragment or dot segments. The host name is
 * resolved first, and the fetch is refused unless every address it has is public (see
 * `internal/publicAddress.ts`: no private, loopback, link-local, unique-local, multicast or
 * unspecified address, IPv4-mapped IPv6 judged as IPv4). The connection then goes to those
 * vetted addresses only (the request's `lookup` answers with them), so a second resolution
 * cannot swap in a private address (DNS rebinding); TLS SNI, certificate check and Host stay
 * the URL's host name. Each fetch opens its own connection.
 *
 * For tests, `allowHttpLoopback` admits `http://127.0.0.1:<port>/...` (and localhost) and
 * nothing else, and `resolve` replaces the system resolver.
 */
import { Effect, Result } from "effect"
import type { LookupAddress } from "node:dns"
import { lookup } from "node:dns/promises"
// The modules themselves, not their ESM namespaces: `request` is read at call time, where the
// interceptors of tests (msw) replace it.
import http from "node:http"
import https from "node:https"
import { isIP } from "node:net"
import type { LookupFunction } from "node:net"
import * as ClientMetadata from "./ClientMetadata.ts"
import { isLoopbackAddress, isPublicAddress } from "./internal/publicAddress.ts"
import { oauthError } from "./OAuthError.ts"
import type { OAuthError } from "./OAuthError.ts"

/** Every address of a host name (both families); rejects when there is none. */
export type Resolve = (hostname: string) => Promise<ReadonlyArray<LookupAddress>>

/** The system's resolver (getaddrinfo, as connections use it). */
export const systemResolve: Resolve = (hostname) => lookup(hostname, { all: true, order: "verbatim" })

export interface Options {
  readonly timeoutMs: number
  readonly maxBytes: number
  readonly allowHttpLoopback: boolean
  readonly resolve: Resolve
}

export const defaults: Options = { timeoutMs: 5_000, maxBytes: 16 * 1024, allowHttpLoopback: false, resolve: systemResolve }

/** Whether a client_id names a metadata document rather than a registered client. */
export const isDocumentClientId = (clientId: string): boolean => /^https?:\/\//i.test(clientId)

/** The URL's host without the brackets of an IPv6 literal. */
const bareHost = (url: URL) => url.hostname.replace(/^\[|\]$/g, "")

/** What is wrong with a client_id URL, or undefined when it may be fetched. */
export const urlProblem = (clientId: string, options: Pick<Options, "allowHttpLoopback">): string | undefined => {
  let url: URL
  try {
    url = new URL(clientId)
  } catch {
    return "is not a URL"
  }
  if (url.href !== clientId) return "must be written in normalised form (lower-case scheme and host, no default port, no dot segments)"
  if (url.username !== "" || url.password !== "" || url.hash !== "") return "must not carry credentials or a fragment"
  if (url.pathname === "/" || url.pathname === "") return "must have a path"
  const loopback = ClientMetadata.isLoopbackHost(url.hostname)
  if (url.protocol === "http:" && options.allowHttpLoopback && loopback) return undefined
  if (url.protocol !== "https:") return "must be an https URL"
  if (loopback || (isIP(bareHost(url)) !== 0 && !isPublicAddress(bareHost(url)))) return "must name a public host"
  return undefined
}

/** `promise`, or the signal's reason once it aborts (a lookup cannot itself be cancelled). */
const untilAborted = <A>(promise: Promise<A>, signal: AbortSignal): Promise<A> =>
  new Promise((resolve, reject) => {
    const abort = () => reject(signal.reason)
    if (signal.aborted) return abort()
    signal.addEventListener("abort", abort, { once: true })
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort))
  })

/** The addresses of the URL's host when every one of them may be connected to; else what is wrong. */
const vettedAddresses = async (
  url: URL,
  options: Options,
  signal: AbortSignal
): Promise<ReadonlyArray<LookupAddress> | string> => {
  const host = bareHost(url)
  const family = isIP(host)
  const addresses = family !== 0 ? [{ address: host, family }] : await untilAborted(options.resolve(host), signal)
  // urlProblem admits http only for a loopback host, and only under allowHttpLoopback.
  const loopbackAllowed = options.allowHttpLoopback && url.protocol === "http:"
  const allowed = ({ address }: LookupAddress) => isPublicAddress(address) || (loopbackAllowed && isLoopbackAddress(address))
  if (addresses.length === 0) return "names a host without an address"
  return addresses.every(allowed) ? addresses : "names a host with a private, loopback or otherwise non-public address"
}

/** A GET connected to one of `addresses` only: the host name is not looked up again. */
const get = (url: URL, addresses: ReadonlyArray<LookupAddress>, signal: AbortSignal) =>
  new Promise<http.IncomingMessage>((resolve, reject) => {
    const pinned: LookupFunction = (_hostname, lookupOptions, callback) =>
      lookupOptions.all === true ? callback(null, [...addresses]) : callback(null, addresses[0]!.address, addresses[0]!.family)
    const request = (url.protocol === "https:" ? https.request : http.request)(url, {
      headers: { accept: "application/json" },
      lookup: pinned,
      // A connection of its own: a pooled one might have been opened to addresses vetted for another fetch.
      agent: false,
      signal
    }, resolve)
    request.once("error", reject)
    request.end()
  })

const readCapped = async (response: http.IncomingMessage, maxBytes: number): Promise<string | undefined> => {
  const declared = Number(response.headers["content-length"])
  if (Number.isFinite(declared) && declared > maxBytes) return undefined
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of response as AsyncIterable<Buffer>) {
    size += chunk.byteLength
    if (size > maxBytes) return undefined
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString("utf8")
}

/**
 * Fetches and checks the client's metadata document. A client_id that cannot be used, or a
 * document that cannot be fetched or does not pass, is `invalid_client`, described.
 */
export const fetchClient = (
  clientId: string,
  options: Options
): Effect.Effect<ClientMetadata.ClientMetadata, OAuthError> => {
  const problem = urlProblem(clientId, options)
  if (problem !== undefined) return Effect.fail(oauthError("invalid_client", `client_id ${problem}`))
  return Effect.tryPromise({
    try: async (signal) => {
      const deadline = AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)])
      const url = new URL(clientId)
      const addresses = await vettedAddresses(url, options, deadline)
      if (typeof addresses === "string") return { problem: addresses } as const
      // No redirect is followed: a 3xx is an answer other than 200 like any other.
      const response = await get(url, addresses, deadline)
      try {
        if (response.statusCode !== 200) return { problem: `answered HTTP ${response.statusCode}` } as const
        const type = response.headers["content-type"] ?? ""
        if (!/^application\/([\w.+-]+\+)?json\b/i.test(type)) return { problem: "is not served as application/json" } as const
        const text = await readCapped(response, options.maxBytes)
        if (text === undefined) return { problem: `is larger than ${options.maxBytes} bytes` } as const
        try {
          return { json: JSON.parse(text) as unknown } as const
        } catch {
          return { problem: "is not valid JSON" } as const
        }
      } finally {
        response.destroy()
      }
    },
    catch: () => oauthError("invalid_client", `The client's metadata document at ${clientId} could not be fetched.`)
  }).pipe(
    Effect.flatMap((outcome) =>
      "problem" in outcome
        ? Effect.fail(oauthError("invalid_client", `The client's metadata document at ${clientId} ${outcome.problem}.`))
        : Effect.fromResult(
          Result.mapError(
            ClientMetadata.parse(outcome.json, clientId),
            (error) => oauthError("invalid_client", `The client's metadata document is not usable: ${error.description}`)
          )
        )
    )
  )
}
