/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, the MCP
 * authorization spec's preferred way for a client to identify itself): the `client_id` is an
 * https URL, and the document it serves is the client's metadata. The authorization server
 * fetches it when a sign-in starts.
 *
 * Fetching a URL a stranger chose is a server-side request: it is bounded (a timeout, a size
 * cap, no redirects, JSON only), and the URL must be https with a path, without credentials,
 * fragment or dot segments, naming a host that is not an IP address of a private, loopback or
 * link-local network. A hostname that resolves into such a network is not caught here; deploy
 * with an egress policy if that matters. For tests, `allowHttpLoopback` admits
 * `http://127.0.0.1:<port>/...` (and localhost) and nothing else.
 */
import { Effect, Result } from "effect"
import { isIP } from "node:net"
import * as ClientMetadata from "./ClientMetadata.ts"
import { oauthError } from "./OAuthError.ts"
import type { OAuthError } from "./OAuthError.ts"

export interface Options {
  readonly timeoutMs: number
  readonly maxBytes: number
  readonly allowHttpLoopback: boolean
}

export const defaults: Options = { timeoutMs: 5_000, maxBytes: 16 * 1024, allowHttpLoopback: false }

/** Whether a client_id names a metadata document rather than a registered client. */
export const isDocumentClientId = (clientId: string): boolean => /^https?:\/\//i.test(clientId)

const PRIVATE_V4 = [/^10\./, /^127\./, /^169\.254\./, /^192\.168\./, /^172\.(1[6-9]|2\d|3[01])\./, /^0\./, /^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\./]

const isPrivateAddress = (host: string): boolean => {
  const bare = host.replace(/^\[|\]$/g, "")
  const version = isIP(bare)
  if (version === 4) return PRIVATE_V4.some((range) => range.test(bare))
  if (version === 6) {
    const lower = bare.toLowerCase()
    return lower === "::1" || lower === "::" || /^f[cd]/.test(lower) || /^fe[89ab]/.test(lower) || lower.startsWith("::ffff:")
  }
  return false
}

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
  if (loopback || isPrivateAddress(url.hostname)) return "must name a public host"
  return undefined
}

const readCapped = async (response: Response, maxBytes: number): Promise<string | undefined> => {
  const declared = Number(response.headers.get("content-length"))
  if (Number.isFinite(declared) && declared > maxBytes) return undefined
  if (response.body === null) return ""
  const reader = response.body.getReader()
  const chunks: Array<Uint8Array> = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      await reader.cancel()
      return undefined
    }
    chunks.push(value)
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
      const response = await fetch(clientId, {
        headers: { accept: "application/json" },
        redirect: "error",
        signal: AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)])
      })
      if (response.status !== 200) return { problem: `answered HTTP ${response.status}` } as const
      const type = response.headers.get("content-type") ?? ""
      if (!/^application\/([\w.+-]+\+)?json\b/i.test(type)) return { problem: "is not served as application/json" } as const
      const text = await readCapped(response, options.maxBytes)
      if (text === undefined) return { problem: `is larger than ${options.maxBytes} bytes` } as const
      try {
        return { json: JSON.parse(text) as unknown } as const
      } catch {
        return { problem: "is not valid JSON" } as const
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
