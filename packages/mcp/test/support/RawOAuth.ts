/**
 * The OAuth flow by hand, over plain fetch, for the protocol tests: registration, the sign-in
 * page as a browser without JavaScript sees it (the form's hidden fields and the CSRF cookie),
 * token requests, and calls to /mcp with a bearer token.
 */
import { createHash, randomBytes } from "node:crypto"

export const pkce = () => {
  const verifier = randomBytes(32).toString("base64url")
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") }
}

export const REDIRECT_URI = "http://127.0.0.1:8976/callback"

export const register = async (base: string, metadata: Record<string, unknown> = {}) => {
  const response = await fetch(`${base}/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: "Raw client",
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: "none",
      ...metadata
    })
  })
  return { status: response.status, body: (await response.json()) as any }
}

export interface SignInPage {
  readonly status: number
  readonly html: string
  readonly headers: Headers
  readonly location: string | null
  /** The form's hidden fields and the CSRF cookie, when the page is a sign-in form. */
  readonly pending: string | undefined
  readonly csrf: string | undefined
  readonly cookie: string | undefined
}

const field = (html: string, name: string) => html.match(new RegExp(`name="${name}" value="([^"]*)"`))?.[1]

export const authorize = async (base: string, params: Record<string, string | undefined>): Promise<SignInPage> => {
  const query = new URLSearchParams(Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined))
  const response = await fetch(`${base}/authorize?${query}`, { redirect: "manual" })
  const html = await response.text()
  const cookie = response.headers.get("set-cookie")?.split(";")[0]
  return {
    status: response.status,
    html,
    headers: response.headers,
    location: response.headers.get("location"),
    pending: field(html, "pending"),
    csrf: field(html, "csrf"),
    cookie
  }
}

export const decide = async (
  base: string,
  page: SignInPage,
  credential: string,
  options: { readonly decision?: "approve" | "deny"; readonly cookie?: string | null; readonly csrf?: string } = {}
) => {
  const cookie = options.cookie === undefined ? page.cookie : options.cookie
  const response = await fetch(`${base}/authorize`, {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      ...(cookie === null || cookie === undefined ? {} : { cookie })
    },
    body: new URLSearchParams({
      pending: page.pending ?? "",
      csrf: options.csrf ?? page.csrf ?? "",
      credential,
      decision: options.decision ?? "approve"
    })
  })
  const location = response.headers.get("location")
  return { status: response.status, html: await response.text(), location: location === null ? undefined : new URL(location) }
}

export const token = async (base: string, form: Record<string, string>, headers: Record<string, string> = {}) => {
  const response = await fetch(`${base}/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(form)
  })
  return { status: response.status, headers: response.headers, body: (await response.json()) as any }
}

export const revoke = async (base: string, form: Record<string, string>) => {
  const response = await fetch(`${base}/revoke`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form)
  })
  return { status: response.status, body: (await response.json()) as any }
}

/** The whole flow for a registered public client: the code, then the first token pair. */
export const signIn = async (
  base: string,
  options: { readonly clientId: string; readonly credential: string; readonly scope?: string; readonly redirectUri?: string }
) => {
  const { verifier, challenge } = pkce()
  const redirectUri = options.redirectUri ?? REDIRECT_URI
  const page = await authorize(base, {
    response_type: "code",
    client_id: options.clientId,
    redirect_uri: redirectUri,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "st",
    scope: options.scope,
    resource: `${base}/mcp`
  })
  if (page.status !== 200) throw new Error(`sign-in page: ${page.status} ${page.html}`)
  const answer = await decide(base, page, options.credential)
  const code = answer.location?.searchParams.get("code")
  if (code == null) throw new Error(`no code: ${answer.status} ${answer.location} ${answer.html}`)
  const tokens = await token(base, {
    grant_type: "authorization_code",
    code,
    code_verifier: verifier,
    redirect_uri: redirectUri,
    client_id: options.clientId,
    resource: `${base}/mcp`
  })
  if (tokens.status !== 200) throw new Error(`token: ${tokens.status} ${JSON.stringify(tokens.body)}`)
  return {
    code,
    verifier,
    tokens: tokens.body as { access_token: string; refresh_token: string; scope: string; expires_in: number }
  }
}

/** A JSON-RPC call to /mcp with a bearer token (a 2025-11-25 initialize by default). */
export const mcpCall = async (
  base: string,
  bearer: string | undefined,
  body: unknown = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
  },
  headers: Record<string, string> = {}
) => {
  const response = await fetch(`${base}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }),
      ...headers
    },
    body: JSON.stringify(body)
  })
  return { status: response.status, headers: response.headers, text: await response.text() }
}

/** The JSON-RPC message of a response that may be an SSE stream. */
export const rpcResult = (text: string): any => {
  const data = text
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => line.slice(6))
  return JSON.parse(data.length > 0 ? data[data.length - 1]! : text)
}
