/**
 * OAuth client metadata (RFC 7591 §2), as registered or published as a Client ID Metadata Document,
 * and its redirect URI rules (OAuth 2.1, RFC 8252): `https:` to any host; `http:` only to a loopback
 * host, port ignored when matching; a native app's private-use scheme; never a fragment or a scheme
 * that cannot receive a redirect. Other comparisons are exact. Unknown members are ignored; the
 * members used are checked.
 */
import { Result, Schema, SchemaIssue } from "effect"
import { oauthError } from "./OAuthError.ts"
import type { OAuthError } from "./OAuthError.ts"
import type { TokenEndpointAuthMethod } from "./OAuthStore.ts"

const MAX_REDIRECT_URIS = 10
const MAX_URI_LENGTH = 2000

const Text = (max: number) => Schema.String.check(Schema.isMaxLength(max))

/** The members of RFC 7591 client metadata this server reads. */
export const ClientMetadataDocument = Schema.Struct({
  redirect_uris: Schema.Array(Text(MAX_URI_LENGTH)).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_REDIRECT_URIS)),
  client_name: Schema.optionalKey(Text(200)),
  client_uri: Schema.optionalKey(Text(MAX_URI_LENGTH)),
  logo_uri: Schema.optionalKey(Text(MAX_URI_LENGTH)),
  scope: Schema.optionalKey(Text(1000)),
  grant_types: Schema.optionalKey(Schema.Array(Text(100))),
  response_types: Schema.optionalKey(Schema.Array(Text(100))),
  token_endpoint_auth_method: Schema.optionalKey(Text(100)),
  software_id: Schema.optionalKey(Text(200)),
  software_version: Schema.optionalKey(Text(100)),
  client_id: Schema.optionalKey(Text(MAX_URI_LENGTH)),
  client_secret: Schema.optionalKey(Schema.Unknown)
})
export type ClientMetadataDocument = typeof ClientMetadataDocument.Type

/** Client metadata that passed every rule. */
export interface ClientMetadata {
  readonly redirectUris: ReadonlyArray<string>
  readonly clientName: string | null
  readonly tokenEndpointAuthMethod: TokenEndpointAuthMethod
  readonly grantTypes: ReadonlyArray<"authorization_code" | "refresh_token">
  /** The members to echo in a registration response. */
  readonly echo: { readonly [member: string]: unknown }
}

const UNREDIRECTABLE = new Set(["javascript:", "data:", "file:", "vbscript:", "about:", "blob:", "ws:", "wss:", "ftp:"])

export const isLoopbackHost = (hostname: string): boolean =>
  hostname === "127.0.0.1" || hostname === "[::1]" || hostname === "localhost"

/** What is wrong with a redirect URI, or undefined when it is acceptable. */
export const redirectUriProblem = (uri: string): string | undefined => {
  if (uri.includes("#")) return "must not contain a fragment"
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return "is not an absolute URI"
  }
  if (url.username !== "" || url.password !== "") return "must not carry user credentials"
  if (url.protocol === "https:") return undefined
  if (url.protocol === "http:") {
    return isLoopbackHost(url.hostname)
      ? undefined
      : "may use http only with a loopback host (127.0.0.1, [::1] or localhost); use https"
  }
  return UNREDIRECTABLE.has(url.protocol) ? `cannot use the ${url.protocol} scheme` : undefined
}

/** Whether a presented redirect URI matches a registered one (exact, or loopback with any port). */
export const redirectUriMatches = (registered: string, presented: string): boolean => {
  if (registered === presented) return true
  let a: URL
  let b: URL
  try {
    a = new URL(registered)
    b = new URL(presented)
  } catch {
    return false
  }
  return (
    a.protocol === "http:" &&
    b.protocol === "http:" &&
    isLoopbackHost(a.hostname) &&
    a.hostname === b.hostname &&
    a.pathname === b.pathname &&
    a.search === b.search &&
    b.hash === ""
  )
}

/** How the sign-in page names where the browser goes next: a host, or an app's link scheme. */
export const redirectTarget = (uri: string): string => {
  const url = new URL(uri)
  return url.protocol === "https:" || url.protocol === "http:" ? url.host : `${url.protocol}//`
}

const describe = SchemaIssue.makeFormatterStandardSchemaV1({})

/**
 * Checks metadata for use by this server. `documentClientId` is set for a Client ID Metadata
 * Document: the document must name itself, and its client is public (no secret).
 */
export const parse = (input: unknown, documentClientId?: string): Result.Result<ClientMetadata, OAuthError> => {
  const decoded = Schema.decodeUnknownResult(ClientMetadataDocument)(input, { errors: "all" })
  if (Result.isFailure(decoded)) {
    const problems = describe(decoded.failure.issue).issues.map(
      (issue) =>
        `${(issue.path ?? []).map((segment) => (typeof segment === "object" ? String(segment.key) : String(segment))).join(".") || "metadata"}: ${issue.message}`
    )
    return Result.fail(oauthError("invalid_client_metadata", problems.join("; ")))
  }
  const doc = decoded.success
  for (const uri of doc.redirect_uris) {
    const problem = redirectUriProblem(uri)
    if (problem !== undefined) return Result.fail(oauthError("invalid_redirect_uri", `redirect_uris: ${uri} ${problem}`))
  }
  const grantTypes = doc.grant_types ?? ["authorization_code", "refresh_token"]
  if (!grantTypes.includes("authorization_code") || grantTypes.some((g) => g !== "authorization_code" && g !== "refresh_token")) {
    return Result.fail(
      oauthError(
        "invalid_client_metadata",
        "grant_types: this server issues authorization_code (required) and refresh_token grants only"
      )
    )
  }
  if ((doc.response_types ?? ["code"]).some((type) => type !== "code")) {
    return Result.fail(oauthError("invalid_client_metadata", "response_types: only code is supported"))
  }
  const method = doc.token_endpoint_auth_method ?? (documentClientId === undefined ? "client_secret_basic" : "none")
  if (documentClientId !== undefined) {
    if (doc.client_id !== documentClientId) {
      return Result.fail(
        oauthError("invalid_client_metadata", `client_id: the metadata document must name itself (${documentClientId})`)
      )
    }
    if (method !== "none" || doc.client_secret !== undefined) {
      return Result.fail(
        oauthError(
          "invalid_client_metadata",
          "token_endpoint_auth_method: a client identified by a metadata document is public here (none), with no secret"
        )
      )
    }
  }
  if (method !== "none" && method !== "client_secret_post" && method !== "client_secret_basic") {
    return Result.fail(
      oauthError("invalid_client_metadata", "token_endpoint_auth_method: one of none, client_secret_post, client_secret_basic")
    )
  }
  const echo: { [member: string]: unknown } = {
    redirect_uris: doc.redirect_uris,
    grant_types: grantTypes,
    response_types: ["code"],
    token_endpoint_auth_method: method
  }
  for (const member of ["client_name", "client_uri", "logo_uri", "scope", "software_id", "software_version"] as const) {
    if (doc[member] !== undefined) echo[member] = doc[member]
  }
  return Result.succeed({
    redirectUris: doc.redirect_uris,
    clientName: doc.client_name?.trim() || null,
    tokenEndpointAuthMethod: method,
    grantTypes: grantTypes as ReadonlyArray<"authorization_code" | "refresh_token">,
    echo
  })
}
