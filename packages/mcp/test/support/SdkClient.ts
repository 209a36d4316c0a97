/**
 * The official MCP client SDK (v2) as a real MCP host uses it: Streamable HTTP with an OAuth
 * client provider that keeps its registration, tokens and PKCE verifier in memory, and sends
 * the account owner to the sign-in page (in Chromium) when the server asks for sign-in.
 */
import { randomUUID } from "node:crypto"
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "@modelcontextprotocol/client"
import type {
  OAuthClientMetadata,
  OAuthDiscoveryState,
  OAuthClientProvider,
  StoredOAuthClientInformation,
  StoredOAuthTokens
} from "@modelcontextprotocol/client"
import type { Owner } from "./Browser.ts"

export type Revision = "2026-07-28" | "2025-11-25"

export class MemoryOAuthProvider implements OAuthClientProvider {
  readonly clientMetadataUrl?: string
  authorizationUrl: URL | undefined
  lastState: string | undefined
  private information: StoredOAuthClientInformation | undefined
  private stored: StoredOAuthTokens | undefined
  private verifier: string | undefined
  /** What discovery found (protected resource and authorization server metadata). */
  discovery: OAuthDiscoveryState | undefined

  readonly options: { readonly redirectUrl: string; readonly clientName: string; readonly clientMetadataUrl?: string }

  constructor(options: { readonly redirectUrl: string; readonly clientName: string; readonly clientMetadataUrl?: string }) {
    this.options = options
    if (options.clientMetadataUrl !== undefined) this.clientMetadataUrl = options.clientMetadataUrl
  }

  get redirectUrl(): string {
    return this.options.redirectUrl
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.options.clientName,
      redirect_uris: [this.options.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none"
    }
  }

  state(): string {
    this.lastState = randomUUID()
    return this.lastState
  }

  clientInformation() {
    return this.information
  }

  saveClientInformation(information: StoredOAuthClientInformation) {
    this.information = information
  }

  tokens() {
    return this.stored
  }

  saveTokens(tokens: StoredOAuthTokens) {
    this.stored = tokens
  }

  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }

  saveCodeVerifier(verifier: string) {
    this.verifier = verifier
  }

  codeVerifier(): string {
    if (this.verifier === undefined) throw new Error("no PKCE verifier was saved")
    return this.verifier
  }

  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state
  }

  discoveryState() {
    return this.discovery
  }

  invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery") {
    if (scope === "all" || scope === "tokens") this.stored = undefined
    if (scope === "all" || scope === "client") this.information = undefined
    if (scope === "all" || scope === "verifier") this.verifier = undefined
    if (scope === "all" || scope === "discovery") this.discovery = undefined
  }
}

export interface Connected {
  readonly client: Client
  readonly transport: StreamableHTTPClientTransport
  /** Where the browser landed after sign-in, when sign-in happened. */
  readonly callback: URL | undefined
}

const newClient = (revision: Revision) =>
  new Client(
    { name: "taskmeter-e2e", version: "1.0.0" },
    revision === "2026-07-28" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {}
  )

/**
 * Connects to the MCP endpoint; when the server demands sign-in, has `owner` sign in with
 * `credential`, completes the authorization (code exchange with PKCE, `iss` checked) and
 * connects again with the tokens.
 */
export const connect = async (options: {
  readonly mcpUrl: string
  readonly provider: MemoryOAuthProvider
  readonly revision: Revision
  readonly owner: Owner
  readonly credential: string
}): Promise<Connected> => {
  const attempt = async () => {
    const transport = new StreamableHTTPClientTransport(new URL(options.mcpUrl), { authProvider: options.provider })
    const client = newClient(options.revision)
    await client.connect(transport)
    return { client, transport }
  }
  try {
    return { ...(await attempt()), callback: undefined }
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error
  }
  const authorizationUrl = options.provider.authorizationUrl
  if (authorizationUrl === undefined) throw new Error("the client was not sent to sign in")
  const callback = await options.owner.signIn(authorizationUrl.href, options.credential)
  const finishing = new StreamableHTTPClientTransport(new URL(options.mcpUrl), { authProvider: options.provider })
  await finishing.finishAuth(callback.searchParams)
  return { ...(await attempt()), callback }
}
