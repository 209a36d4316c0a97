/**
 * The credential a request presents, read the one way the API, chat and MCP all read it:
 * `Authorization: Bearer <secret>` (scheme case-insensitive, one or more spaces or tabs), else
 * `x-api-key: <secret>`. Exactly one is taken: a Bearer credential wins over x-api-key. Secrets
 * are trimmed; an empty one is no credential.
 */
export const API_KEY_HEADER = "x-api-key"

export interface PresentedCredential {
  readonly secret: string
  /** The header it came from: OAuth access tokens are taken from `authorization` only. */
  readonly header: "authorization" | typeof API_KEY_HEADER
}

const BEARER = /^Bearer[ \t]+(.*)$/i

/** The presented credential of a request's headers (lower-case names), or undefined for none. */
export const fromHeaders = (headers: { readonly [name: string]: string | undefined }): PresentedCredential | undefined => {
  const bearer = BEARER.exec(headers.authorization ?? "")?.[1]?.trim()
  if (bearer) return { secret: bearer, header: "authorization" }
  const apiKey = headers[API_KEY_HEADER]?.trim()
  return apiKey ? { secret: apiKey, header: API_KEY_HEADER } : undefined
}
