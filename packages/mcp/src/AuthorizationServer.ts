/**
 * The built-in OAuth 2.1 authorization server MCP clients sign in with (issuer: the base URL;
 * /authorize, /token, /register, /revoke at the root; protected resource `<base>/mcp`), and the
 * check of the access tokens it issues: authorization code with PKCE S256, dynamic registration
 * and Client ID Metadata Documents, RFC 8707 resources, RFC 9207 `iss`. Token lifetimes, scopes
 * and limits: docs/decisions.md, MCP.
 */
import { Clock, Context, Effect, Layer, Result } from "effect"
import { Accounts, ClientSource, Errors, Scope, StoreError } from "@taskmeter/kernel"
import * as AuthorizeLimit from "./AuthorizeLimit.ts"
import * as ClientIdMetadata from "./ClientIdMetadata.ts"
import * as ClientMetadata from "./ClientMetadata.ts"
import { oauthError } from "./OAuthError.ts"
import type { OAuthError } from "./OAuthError.ts"
import { OAuthStore } from "./OAuthStore.ts"
import * as RegistrationLimit from "./RegistrationLimit.ts"
import type { Grant, NewTokens, PendingAuthorization } from "./OAuthStore.ts"
import { CHALLENGE, newSecret, PREFIX, safeEqual, sha256Hex, verifyPkce } from "./internal/Secrets.ts"
import { describeUnstorable, firstUnstorable, firstUnstorableParam, isStorable } from "./internal/StorableText.ts"

export interface Options {
  /** The public origin of the service, e.g. `https://api.example.com` (no path): the issuer. */
  readonly baseUrl: string
  readonly accessTokenTtlSeconds?: number | undefined
  readonly refreshTokenTtlSeconds?: number | undefined
  readonly authorizationCodeTtlSeconds?: number | undefined
  /** How long the sign-in page stays valid. */
  readonly signInTtlSeconds?: number | undefined
  readonly maxSignInAttempts?: number | undefined
  readonly clientIdMetadata?: Partial<ClientIdMetadata.Options> | undefined
  readonly registrationLimit?: Partial<RegistrationLimit.Options> | undefined
  /** How long a registration lasts if no sign-in through it completes (default 24 hours). */
  readonly unusedClientTtlSeconds?: number | undefined
  /** Requests to /authorize per client address and window (default 30 a minute). */
  readonly authorizeLimit?: Partial<AuthorizeLimit.Options> | undefined
  /** How long a grant lasts from its sign-in at most, however often it is refreshed (default 90 days). */
  readonly grantLifetimeSeconds?: number | undefined
}

/** The scopes MCP clients are offered, in the order the sign-in page lists them. */
export const mcpScopes: ReadonlyArray<Scope.Scope> = ["jobs:create", "jobs:read", "usage:read"]

export interface Settings {
  readonly issuer: string
  readonly resource: string
  readonly resourceMetadataUrl: string
  readonly endpoints: {
    readonly authorization: string
    readonly token: string
    readonly registration: string
    readonly revocation: string
  }
  readonly accessTokenTtlSeconds: number
  readonly refreshTokenTtlSeconds: number
  readonly authorizationCodeTtlSeconds: number
  readonly signInTtlSeconds: number
  readonly maxSignInAttempts: number
  readonly clientIdMetadata: ClientIdMetadata.Options
  readonly registrationLimit: RegistrationLimit.Options
  readonly unusedClientTtlSeconds: number
  readonly authorizeLimit: AuthorizeLimit.Options
  readonly grantLifetimeSeconds: number
}

/** Resolves the options; throws on a base URL that is not a bare http(s) origin (a configuration defect). */
export const settings = (options: Options): Settings => {
  const base = new URL(options.baseUrl)
  if ((base.protocol !== "https:" && base.protocol !== "http:") || base.pathname !== "/" || base.search !== "") {
    throw new Error(`AuthorizationServer: baseUrl must be an http(s) origin without a path, got ${options.baseUrl}`)
  }
  const issuer = base.origin
  return {
    issuer,
    resource: `${issuer}/mcp`,
    resourceMetadataUrl: `${issuer}/.well-known/oauth-protected-resource/mcp`,
    endpoints: {
      authorization: `${issuer}/authorize`,
      token: `${issuer}/token`,
      registration: `${issuer}/register`,
      revocation: `${issuer}/revoke`
    },
    accessTokenTtlSeconds: options.accessTokenTtlSeconds ?? 3600,
    refreshTokenTtlSeconds: options.refreshTokenTtlSeconds ?? 30 * 24 * 3600,
    authorizationCodeTtlSeconds: options.authorizationCodeTtlSeconds ?? 300,
    signInTtlSeconds: options.signInTtlSeconds ?? 600,
    maxSignInAttempts: options.maxSignInAttempts ?? 5,
    clientIdMetadata: { ...ClientIdMetadata.defaults, ...options.clientIdMetadata },
    registrationLimit: RegistrationLimit.resolve(options.registrationLimit),
    unusedClientTtlSeconds: options.unusedClientTtlSeconds ?? 24 * 3600,
    authorizeLimit: AuthorizeLimit.resolve(options.authorizeLimit),
    grantLifetimeSeconds: options.grantLifetimeSeconds ?? 90 * 24 * 3600
  }
}

/** RFC 8414 authorization server metadata. */
export const authorizationServerMetadata = (s: Settings) => ({
  issuer: s.issuer,
  authorization_endpoint: s.endpoints.authorization,
  token_endpoint: s.endpoints.token,
  registration_endpoint: s.endpoints.registration,
  revocation_endpoint: s.endpoints.revocation,
  scopes_supported: mcpScopes,
  response_types_supported: ["code"],
  response_modes_supported: ["query"],
  grant_types_supported: ["authorization_code", "refresh_token"],
  token_endpoint_auth_methods_supported: ["none", "client_secret_basic", "client_secret_post"],
  revocation_endpoint_auth_methods_supported: ["none", "client_secret_basic", "client_secret_post"],
  code_challenge_methods_supported: ["S256"],
  authorization_response_iss_parameter_supported: true,
  client_id_metadata_document_supported: true
})

/** RFC 9728 protected resource metadata of the MCP endpoint. */
export const protectedResourceMetadata = (s: Settings) => ({
  resource: s.resource,
  authorization_servers: [s.issuer],
  scopes_supported: mcpScopes,
  bearer_methods_supported: ["header"],
  resource_name: "taskmeter MCP"
})

/** What the sign-in page shows. */
export interface SignInView {
  readonly pendingId: string
  readonly csrfToken: string
  readonly clientName: string | null
  readonly clientVerified: boolean
  readonly clientId: string
  readonly redirectUri: string
  /** How the page names where the browser returns: the redirect URI's host, or an app's link scheme. */
  readonly redirectTarget: string
  readonly scopes: ReadonlyArray<Scope.Scope>
  readonly expiresAt: Date
  /** Why the last attempt was refused. */
  readonly error?: string | undefined
}

export type AuthorizeOutcome =
  | { readonly _tag: "SignIn"; readonly view: SignInView; readonly status: number }
  /** Back to the client; `endsSignIn` names the pending authorization whose cookie can go. */
  | { readonly _tag: "Redirect"; readonly location: string; readonly endsSignIn?: string | undefined }
  /** Nothing can be sent back to the client (unknown client, bad redirect URI, expired page). */
  | {
      readonly _tag: "Problem"
      readonly status: number
      readonly title: string
      readonly detail: string
      /** Sent as Retry-After. */
      readonly retryAfterSeconds?: number | undefined
    }

export interface Decision {
  readonly pendingId: string
  readonly csrfToken: string
  /** The CSRF cookie the browser sent, if any. */
  readonly cookieToken: string | undefined
  readonly credential: string
  readonly approve: boolean
}

export interface TokenResponse {
  readonly access_token: string
  readonly token_type: "Bearer"
  readonly expires_in: number
  readonly refresh_token: string
  readonly scope: string
}

/** A verified access token: who calls, with which powers, through which client. */
export interface Verified {
  readonly caller: Accounts.Caller
  readonly clientId: string
  readonly scopes: ReadonlyArray<Scope.Scope>
  readonly expiresAt: Date
  readonly resource: string
}

export class AuthorizationServer extends Context.Service<
  AuthorizationServer,
  {
    readonly settings: Settings
    /**
     * RFC 7591 registration from the given remote address (undefined when unknown): the
     * registration response, or an OAuth error (`too_many_requests` past the limit).
     */
    readonly register: (
      body: unknown,
      remoteAddress: string | undefined
    ) => Effect.Effect<{ readonly [member: string]: unknown }, OAuthError>
    /**
     * Counts a request to /authorize (either method) from the given remote address: undefined
     * when it may proceed, else the page to answer with (429 past the limit).
     */
    readonly admitAuthorize: (remoteAddress: string | undefined) => Effect.Effect<AuthorizeOutcome | undefined>
    /**
     * GET /authorize: checks the request and opens a sign-in, or says why not. `rawQuery` (the
     * URL's `search`, still percent-encoded) lets it refuse what `query` no longer shows: a
     * parameter sent twice, or one that is not valid percent-encoded UTF-8.
     */
    readonly authorize: (query: URLSearchParams, rawQuery?: string) => Effect.Effect<AuthorizeOutcome>
    /** POST /authorize: the owner's answer on the sign-in page. */
    readonly decide: (decision: Decision) => Effect.Effect<AuthorizeOutcome>
    /** POST /token, form-encoded, with the request's Authorization header if any. */
    readonly token: (form: URLSearchParams, authorization: string | undefined) => Effect.Effect<TokenResponse, OAuthError>
    /** POST /revoke (RFC 7009): succeeds for unknown tokens too; fails only on client authentication. */
    readonly revoke: (form: URLSearchParams, authorization: string | undefined) => Effect.Effect<void, OAuthError>
    /** Checks an access token presented to the MCP endpoint. */
    readonly verify: (accessToken: string) => Effect.Effect<Verified, Errors.AuthRequired | Errors.AuthUnavailable>
  }
>()("@taskmeter/mcp/AuthorizationServer") {}

const describeSeconds = (seconds: number) =>
  seconds % 86400 === 0 ? `${seconds / 86400} days` : seconds % 3600 === 0 ? `${seconds / 3600} hours` : `${seconds} seconds`

const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis))
const later = (from: Date, seconds: number) => new Date(from.getTime() + seconds * 1000)

/**
 * A store failure as temporarily_unavailable: logged with its details, answered without them
 * (they name internal operations).
 */
const orUnavailable = <A, R>(effect: Effect.Effect<A, StoreError.StoreUnavailable, R>): Effect.Effect<A, OAuthError, R> =>
  effect.pipe(
    Effect.catchTag("StoreUnavailable", (error) =>
      Effect.andThen(
        Effect.logWarning("OAuth storage failed", error),
        Effect.fail(oauthError("temporarily_unavailable", "Sign-in is temporarily unavailable; retry shortly."))
      )
    )
  )

/** invalid_request naming the first form parameter that cannot be stored, if any. */
const checkStorableForm = (form: URLSearchParams) => {
  const bad = firstUnstorableParam(form)
  return bad === undefined ? Effect.void : Effect.fail(oauthError("invalid_request", describeUnstorable(bad)))
}

/** The longest `state` accepted: it is stored with the sign-in and sent back in the redirect. */
export const MAX_STATE_LENGTH = 2048

/** Parameters RFC 8707 lets a client repeat; any other sent twice is invalid_request (RFC 6749 §3.1). */
const REPEATABLE = new Set(["resource"])

const decodeComponent = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text.replaceAll("+", " "))
  } catch {
    return undefined
  }
}

/**
 * The first problem of a raw query string (`?a=b&...`) that URLSearchParams hides: a parameter
 * whose name or value is not valid percent-encoded UTF-8 (URLSearchParams would turn its bytes
 * into U+FFFD or keep a stray %, so a `state` would not come back as sent), or one sent more than
 * once (which one counts would be a guess). `param` is "a parameter name" when the name is bad.
 */
export const rawQueryProblem = (rawQuery: string): { readonly param: string; readonly description: string } | undefined => {
  const seen = new Set<string>()
  for (const part of rawQuery.replace(/^\?/, "").split("&")) {
    if (part === "") continue
    const equals = part.indexOf("=")
    const name = decodeComponent(equals === -1 ? part : part.slice(0, equals))
    if (name === undefined) {
      return { param: "a parameter name", description: "A parameter name is not valid percent-encoded UTF-8." }
    }
    if (equals !== -1 && decodeComponent(part.slice(equals + 1)) === undefined) {
      return {
        param: name,
        description: `${name} is not valid percent-encoded UTF-8; percent-encode the UTF-8 bytes of its value.`
      }
    }
    if (seen.has(name) && !REPEATABLE.has(name)) {
      return { param: name, description: `${name} is sent more than once; send each parameter once.` }
    }
    seen.add(name)
  }
  return undefined
}

/** Adds the authorization response parameters to a redirect URI, keeping its own query. */
const responseLocation = (redirectUri: string, params: { readonly [name: string]: string | null }) => {
  const url = new URL(redirectUri)
  for (const [name, value] of Object.entries(params)) {
    if (value !== null) url.searchParams.set(name, value)
  }
  return url.href
}

/** The requested scopes this server knows; all MCP scopes when none is known. */
const requestedScopes = (scope: string | null): ReadonlyArray<Scope.Scope> => {
  const known = (scope ?? "")
    .split(" ")
    .filter((name): name is Scope.Scope => (mcpScopes as ReadonlyArray<string>).includes(name))
  return known.length === 0 ? mcpScopes : mcpScopes.filter((name) => known.includes(name))
}

const intersect = (a: ReadonlyArray<Scope.Scope>, b: ReadonlyArray<Scope.Scope>) => a.filter((scope) => b.includes(scope))

/** Client credentials presented at the token or revocation endpoint (RFC 6749 §2.3.1). */
const presentedClient = (
  form: URLSearchParams,
  authorization: string | undefined
): Result.Result<{ readonly clientId: string; readonly secret: string | null }, OAuthError> => {
  const basic = authorization?.match(/^Basic\s+([A-Za-z0-9+/=]+)\s*$/i)
  if (basic) {
    const decoded = Buffer.from(basic[1]!, "base64").toString("utf8")
    const colon = decoded.indexOf(":")
    if (colon < 0) return Result.fail(oauthError("invalid_client", "Malformed Basic client credentials."))
    try {
      return Result.succeed({
        clientId: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, " ")),
        secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, " "))
      })
    } catch {
      return Result.fail(oauthError("invalid_client", "Malformed Basic client credentials."))
    }
  }
  const clientId = form.get("client_id")
  if (clientId === null || clientId === "") return Result.fail(oauthError("invalid_client", "client_id is required."))
  return Result.succeed({ clientId, secret: form.get("client_secret") })
}

export const make = (options: Options) =>
  Effect.gen(function* () {
    const s = settings(options)
    const store = yield* OAuthStore
    const accounts = yield* Accounts.Accounts

    /** The client a token request comes from, authenticated as it registered. */
    const authenticateClient = (form: URLSearchParams, authorization: string | undefined) =>
      Effect.gen(function* () {
        yield* checkStorableForm(form)
        const presented = yield* Effect.fromResult(presentedClient(form, authorization))
        if (!isStorable(presented.clientId) || (presented.secret !== null && !isStorable(presented.secret))) {
          return yield* Effect.fail(oauthError("invalid_request", describeUnstorable("The client credentials")))
        }
        if (ClientIdMetadata.isDocumentClientId(presented.clientId)) {
          if (presented.secret !== null) {
            return yield* Effect.fail(oauthError("invalid_client", "A client identified by a metadata document has no secret."))
          }
          return presented.clientId
        }
        const client = yield* orUnavailable(store.getClient(presented.clientId))
        if (client === undefined) return yield* Effect.fail(oauthError("invalid_client", "Unknown client_id."))
        if (
          client.secretHash !== null &&
          (presented.secret === null || !safeEqual(sha256Hex(presented.secret), client.secretHash))
        ) {
          return yield* Effect.fail(oauthError("invalid_client", "Client authentication failed."))
        }
        return client.clientId
      })

    /**
     * The scopes and limits of the API key a grant was approved with, as the key stands now:
     * undefined when the key (or the account) can no longer be used.
     */
    const keyStanding = (grant: Grant) =>
      grant.apiKeyId === null
        ? Effect.succeed({ scopes: Scope.all, usageLimit: null as number | null })
        : Effect.map(accounts.listKeys(grant.accountId), (keys) => {
            const key = keys.find((candidate) => candidate.id === grant.apiKeyId)
            return key === undefined || key.revokedAt !== null ? undefined : { scopes: key.scopes, usageLimit: key.usageLimit }
          })

    /** A new pair at `at` for a grant signed in at `grantCreatedAt`: neither outlives the grant's lifetime. */
    const newTokens = (at: Date, scopes: ReadonlyArray<Scope.Scope>, grantCreatedAt: Date) => {
      const access = newSecret(PREFIX.accessToken)
      const refresh = newSecret(PREFIX.refreshToken)
      const grantEnds = later(grantCreatedAt, s.grantLifetimeSeconds).getTime()
      const accessExpiresAt = new Date(Math.min(later(at, s.accessTokenTtlSeconds).getTime(), grantEnds))
      const record: NewTokens = {
        accessHash: sha256Hex(access),
        accessExpiresAt,
        refreshHash: sha256Hex(refresh),
        refreshExpiresAt: new Date(Math.min(later(at, s.refreshTokenTtlSeconds).getTime(), grantEnds)),
        scopes
      }
      const response: TokenResponse = {
        access_token: access,
        token_type: "Bearer",
        expires_in: Math.max(0, Math.floor((accessExpiresAt.getTime() - at.getTime()) / 1000)),
        refresh_token: refresh,
        scope: scopes.join(" ")
      }
      return { record, response }
    }

    const checkResource = (form: URLSearchParams, bound: string) => {
      const resources = form.getAll("resource")
      return resources.every((resource) => resource === bound)
        ? Effect.void
        : Effect.fail(oauthError("invalid_target", `This grant is for ${bound} only.`))
    }

    const register = (body: unknown, remoteAddress: string | undefined) =>
      Effect.gen(function* () {
        const unstorable = firstUnstorable(body)
        if (unstorable !== undefined) {
          return yield* Effect.fail(oauthError("invalid_client_metadata", describeUnstorable(unstorable)))
        }
        const metadata = yield* Effect.fromResult(ClientMetadata.parse(body))
        const at = yield* now
        const window = RegistrationLimit.windowAt(at, ClientSource.sourceOf(remoteAddress), s.registrationLimit)
        const admission = yield* orUnavailable(store.admitRegistration(window))
        if (admission._tag === "Limited") {
          const wait = RegistrationLimit.retryAfterSeconds(window, at)
          return yield* Effect.fail(
            oauthError(
              "too_many_requests",
              admission.by === "source"
                ? `Too many client registrations from this network; try again in ${wait} seconds.`
                : `Too many client registrations right now; try again in ${wait} seconds.`,
              wait
            )
          )
        }
        const clientId = `mcpc_${crypto.randomUUID()}`
        const secret = metadata.tokenEndpointAuthMethod === "none" ? null : newSecret(PREFIX.clientSecret)
        yield* orUnavailable(
          store.insertClient({
            clientId,
            secretHash: secret === null ? null : sha256Hex(secret),
            tokenEndpointAuthMethod: metadata.tokenEndpointAuthMethod,
            redirectUris: metadata.redirectUris,
            clientName: metadata.clientName,
            metadata: metadata.echo,
            createdAt: at,
            unusedExpiresAt: later(at, s.unusedClientTtlSeconds)
          })
        )
        return {
          ...metadata.echo,
          client_id: clientId,
          client_id_issued_at: Math.floor(at.getTime() / 1000),
          ...(secret === null ? {} : { client_secret: secret, client_secret_expires_at: 0 })
        }
      })

    const problem = (status: number, title: string, detail: string): AuthorizeOutcome => ({
      _tag: "Problem",
      status,
      title,
      detail
    })

    const admitAuthorize = (remoteAddress: string | undefined): Effect.Effect<AuthorizeOutcome | undefined> =>
      Effect.gen(function* () {
        const at = yield* now
        const window = AuthorizeLimit.windowAt(at, remoteAddress, s.authorizeLimit)
        if (yield* store.admitRequest(window)) return undefined
        const wait = AuthorizeLimit.retryAfterSeconds(window, at)
        return {
          _tag: "Problem",
          status: 429,
          title: "Too many sign-in requests",
          detail: `Too many sign-in requests came from this network; try again in ${wait} seconds.`,
          retryAfterSeconds: wait
        } as const
      }).pipe(
        Effect.catchTag("StoreUnavailable", (error) =>
          Effect.as(
            Effect.logWarning("OAuth storage failed", error),
            problem(503, "Sign-in is unavailable", "Sign-in is temporarily unavailable. Try again in a minute.")
          )
        )
      )

    const authorize = (query: URLSearchParams, rawQuery?: string): Effect.Effect<AuthorizeOutcome> =>
      Effect.gen(function* () {
        // Without a trusted client_id and redirect_uri there is nowhere safe to send an error: a page.
        const untrusted = (param: string) => param === "client_id" || param === "redirect_uri" || param === "a parameter name"
        const malformed = rawQuery === undefined ? undefined : rawQueryProblem(rawQuery)
        if (malformed !== undefined && untrusted(malformed.param)) {
          return problem(400, "This sign-in link is malformed", malformed.description)
        }
        const unstorable = firstUnstorableParam(query)
        if (unstorable !== undefined && untrusted(unstorable)) {
          return problem(400, "This sign-in link is malformed", describeUnstorable(unstorable))
        }
        const clientId = query.get("client_id")
        if (clientId === null || clientId === "") {
          return problem(400, "This sign-in link is incomplete", "The app did not say who it is (client_id is missing).")
        }
        const client = ClientIdMetadata.isDocumentClientId(clientId)
          ? yield* Effect.result(ClientIdMetadata.fetchClient(clientId, s.clientIdMetadata)).pipe(
              Effect.map((result) =>
                Result.isSuccess(result)
                  ? { redirectUris: result.success.redirectUris, clientName: result.success.clientName, verified: true }
                  : result.failure.description
              )
            )
          : yield* store.getClient(clientId).pipe(
              Effect.map((found) =>
                found === undefined
                  ? "The app is not registered with this service."
                  : { redirectUris: found.redirectUris, clientName: found.clientName, verified: false }
              ),
              Effect.catchTag("StoreUnavailable", (error) =>
                Effect.as(Effect.logWarning("OAuth storage failed", error), undefined)
              )
            )
        if (client === undefined) {
          return problem(503, "Sign-in is unavailable", "Sign-in is temporarily unavailable. Try again in a minute.")
        }
        if (typeof client === "string") return problem(400, "This app cannot sign in", client)

        const presentedRedirect = query.get("redirect_uri")
        const redirectUri =
          presentedRedirect === null
            ? client.redirectUris.length === 1
              ? client.redirectUris[0]
              : undefined
            : client.redirectUris.some((registered) => ClientMetadata.redirectUriMatches(registered, presentedRedirect))
              ? presentedRedirect
              : undefined
        if (redirectUri === undefined) {
          return problem(
            400,
            "This app cannot sign in",
            presentedRedirect === null
              ? "The app did not say where to return after sign-in (redirect_uri is missing)."
              : "The app asked to return to an address it has not registered."
          )
        }

        const presentedState = query.get("state")
        const stateTooLong = presentedState !== null && presentedState.length > MAX_STATE_LENGTH
        // A state that could not be kept as sent is not sent back.
        const state = unstorable === "state" || malformed?.param === "state" || stateTooLong ? null : presentedState
        const fail = (error: string, description: string): AuthorizeOutcome => ({
          _tag: "Redirect",
          location: responseLocation(redirectUri, { error, error_description: description, state, iss: s.issuer })
        })
        if (malformed !== undefined) return fail("invalid_request", malformed.description)
        if (unstorable !== undefined) return fail("invalid_request", describeUnstorable(unstorable))
        if (stateTooLong) {
          return fail("invalid_request", `state is ${presentedState.length} characters long; send at most ${MAX_STATE_LENGTH}.`)
        }
        if (query.get("response_type") !== "code") {
          return fail("unsupported_response_type", "Only response_type=code is supported.")
        }
        const challenge = query.get("code_challenge")
        if (challenge === null || query.get("code_challenge_method") !== "S256" || !CHALLENGE.test(challenge)) {
          return fail("invalid_request", "PKCE is required: send code_challenge with code_challenge_method=S256.")
        }
        const resources = query.getAll("resource")
        if (resources.some((resource) => resource !== s.resource)) {
          return fail("invalid_target", `This server issues tokens for ${s.resource} only.`)
        }

        const at = yield* now
        const csrfToken = newSecret("")
        const pending: PendingAuthorization = {
          id: crypto.randomUUID(),
          csrfHash: sha256Hex(csrfToken),
          clientId,
          clientName: client.clientName,
          clientVerified: client.verified,
          redirectUri,
          state,
          codeChallenge: challenge,
          scopes: requestedScopes(query.get("scope")),
          resource: s.resource,
          failedAttempts: 0,
          createdAt: at,
          expiresAt: later(at, s.signInTtlSeconds)
        }
        const stored = yield* Effect.result(store.insertPending(pending))
        if (Result.isFailure(stored)) {
          yield* Effect.logWarning("OAuth storage failed", stored.failure)
          return problem(503, "Sign-in is unavailable", "Sign-in is temporarily unavailable. Try again in a minute.")
        }
        return { _tag: "SignIn", status: 200, view: viewOf(pending, csrfToken) }
      })

    const viewOf = (pending: PendingAuthorization, csrfToken: string, error?: string): SignInView => ({
      pendingId: pending.id,
      csrfToken,
      clientName: pending.clientName,
      clientVerified: pending.clientVerified,
      clientId: pending.clientId,
      redirectUri: pending.redirectUri,
      redirectTarget: ClientMetadata.redirectTarget(pending.redirectUri),
      scopes: pending.scopes,
      expiresAt: pending.expiresAt,
      error
    })

    const expired = problem(
      400,
      "This sign-in has ended",
      "The sign-in page expired or was already answered. Start again from your app."
    )
    const storeDown = problem(503, "Sign-in is unavailable", "Sign-in is temporarily unavailable. Try again in a minute.")

    /** Who the credential on the sign-in page belongs to, or why it was refused. */
    const signInWith = (credential: string, at: Date) =>
      credential.startsWith(PREFIX.signInCode)
        ? Effect.map(store.redeemSignInCode(sha256Hex(credential), at), (accountId) =>
            accountId === undefined
              ? ({ _tag: "Refused", reason: "That sign-in code is not valid, or was already used." } as const)
              : ({ _tag: "Accepted", accountId, apiKeyId: null, scopes: Scope.all } as const)
          )
        : accounts.authenticate(credential).pipe(
            Effect.map(
              (caller) =>
                ({ _tag: "Accepted", accountId: caller.accountId, apiKeyId: caller.apiKeyId, scopes: caller.scopes }) as const
            ),
            Effect.catchTags({
              AuthRequired: () => Effect.succeed({ _tag: "Refused", reason: "That API key was not accepted." } as const),
              PermissionDenied: () => Effect.succeed({ _tag: "Refused", reason: "That API key has been revoked." } as const),
              ApiKeyRateLimited: (error) =>
                Effect.succeed({
                  _tag: "Refused",
                  reason: `That API key is over its request rate; wait ${error.retryAfterSeconds ?? 60} seconds.`
                } as const),
              AuthUnavailable: (error) => Effect.fail(new StoreError.StoreUnavailable({ message: error.message }))
            })
          )

    const decide = (decision: Decision): Effect.Effect<AuthorizeOutcome> =>
      Effect.gen(function* () {
        const fields = [decision.pendingId, decision.csrfToken, decision.cookieToken ?? "", decision.credential]
        if (!fields.every(isStorable)) {
          return problem(400, "This sign-in could not be read", describeUnstorable("The form"))
        }
        const at = yield* now
        const pending = yield* store.getPending(decision.pendingId, at)
        if (pending === undefined) return expired
        const csrfValid =
          decision.cookieToken !== undefined &&
          safeEqual(decision.csrfToken, decision.cookieToken) &&
          safeEqual(sha256Hex(decision.csrfToken), pending.csrfHash)
        if (!csrfValid) {
          return problem(
            403,
            "This sign-in could not be verified",
            "The form did not come from the sign-in page this browser opened. Start again from your app."
          )
        }
        const back = (params: { readonly [name: string]: string | null }): AuthorizeOutcome => ({
          _tag: "Redirect",
          location: responseLocation(pending.redirectUri, { ...params, state: pending.state, iss: s.issuer }),
          endsSignIn: pending.id
        })
        if (!decision.approve) {
          return (yield* store.takePending(pending.id, at)) === undefined
            ? expired
            : back({ error: "access_denied", error_description: "The account owner declined." })
        }

        const refuse = (reason: string) =>
          Effect.gen(function* () {
            const attempts = yield* store.recordFailedAttempt(pending.id, at)
            if (attempts === undefined) return expired
            if (attempts >= s.maxSignInAttempts) {
              yield* store.takePending(pending.id, at)
              return problem(
                429,
                "Too many attempts",
                "This sign-in was stopped after repeated refusals. Start again from your app."
              )
            }
            return { _tag: "SignIn", status: 401, view: viewOf(pending, decision.csrfToken, reason) } as const
          })

        const credential = decision.credential.trim()
        if (credential === "") return yield* refuse("Enter an API key or a sign-in code.")
        const signedIn = yield* signInWith(credential, at)
        if (signedIn._tag === "Refused") return yield* refuse(signedIn.reason)
        const scopes = intersect(pending.scopes, signedIn.scopes)
        if (scopes.length === 0) {
          return yield* refuse(`That key cannot grant any of the permissions asked for (it holds ${signedIn.scopes.join(", ")}).`)
        }

        if ((yield* store.takePending(pending.id, at)) === undefined) return expired
        const code = newSecret(PREFIX.authorizationCode)
        yield* store.insertCode({
          hash: sha256Hex(code),
          grantId: crypto.randomUUID(),
          clientId: pending.clientId,
          redirectUri: pending.redirectUri,
          codeChallenge: pending.codeChallenge,
          accountId: signedIn.accountId,
          apiKeyId: signedIn.apiKeyId,
          scopes,
          resource: pending.resource,
          createdAt: at,
          expiresAt: later(at, s.authorizationCodeTtlSeconds),
          redeemedAt: null
        })
        return back({ code })
      }).pipe(
        Effect.catchTag("StoreUnavailable", (error) => Effect.as(Effect.logWarning("OAuth storage failed", error), storeDown))
      )

    const exchangeCode = (form: URLSearchParams, clientId: string) =>
      Effect.gen(function* () {
        const code = form.get("code")
        const verifier = form.get("code_verifier")
        if (code === null || verifier === null) {
          return yield* Effect.fail(oauthError("invalid_request", "code and code_verifier are required."))
        }
        const hash = sha256Hex(code)
        const stored = yield* orUnavailable(store.getCode(hash))
        if (stored === undefined || stored.clientId !== clientId) {
          return yield* Effect.fail(oauthError("invalid_grant", "The authorization code is not valid for this client."))
        }
        const redirectUri = form.get("redirect_uri")
        if (redirectUri !== null && redirectUri !== stored.redirectUri) {
          return yield* Effect.fail(oauthError("invalid_grant", "redirect_uri differs from the authorization request."))
        }
        if (!verifyPkce(verifier, stored.codeChallenge)) {
          return yield* Effect.fail(oauthError("invalid_grant", "code_verifier does not match the code_challenge."))
        }
        yield* checkResource(form, stored.resource)
        const at = yield* now
        const issued = newTokens(at, stored.scopes, at)
        const redemption = yield* orUnavailable(store.redeemCode(hash, at, issued.record))
        switch (redemption._tag) {
          case "Redeemed":
            return issued.response
          case "AlreadyRedeemed":
            return yield* Effect.fail(
              oauthError("invalid_grant", "The authorization code was already used; the tokens issued with it are revoked.")
            )
          case "Invalid":
            return yield* Effect.fail(oauthError("invalid_grant", "The authorization code has expired."))
        }
      })

    const refresh = (form: URLSearchParams, clientId: string) =>
      Effect.gen(function* () {
        const token = form.get("refresh_token")
        if (token === null) return yield* Effect.fail(oauthError("invalid_request", "refresh_token is required."))
        const hash = sha256Hex(token)
        const found = yield* orUnavailable(store.findToken(hash))
        if (found === undefined || found.token.kind !== "refresh" || found.grant.clientId !== clientId) {
          return yield* Effect.fail(oauthError("invalid_grant", "The refresh token is not valid for this client."))
        }
        yield* checkResource(form, found.grant.resource)
        const asked = form.get("scope")
        const askedNames = asked === null ? [] : asked.split(" ").filter((name) => name !== "")
        const scopes = asked === null ? found.token.scopes : found.grant.scopes.filter((scope) => askedNames.includes(scope))
        if (asked !== null && (scopes.length === 0 || scopes.length !== new Set(askedNames).size)) {
          return yield* Effect.fail(oauthError("invalid_scope", `The grant allows ${found.grant.scopes.join(" ")} at most.`))
        }
        const at = yield* now
        if (at.getTime() >= later(found.grant.createdAt, s.grantLifetimeSeconds).getTime()) {
          yield* orUnavailable(store.revokeGrant(found.grant.id, at))
          return yield* Effect.fail(
            oauthError(
              "invalid_grant",
              `This sign-in has reached its maximum lifetime of ${describeSeconds(s.grantLifetimeSeconds)}; sign in again.`
            )
          )
        }
        const standing = yield* orUnavailable(keyStanding(found.grant))
        if (standing === undefined) {
          yield* orUnavailable(store.revokeGrant(found.grant.id, at))
          return yield* Effect.fail(oauthError("invalid_grant", "The API key this sign-in used has been revoked; sign in again."))
        }
        const issued = newTokens(at, intersect(scopes, standing.scopes), found.grant.createdAt)
        const rotation = yield* orUnavailable(store.rotateRefresh(hash, at, issued.record))
        switch (rotation._tag) {
          case "Rotated":
            return issued.response
          case "Reused":
            return yield* Effect.fail(
              oauthError("invalid_grant", "The refresh token was already used; this sign-in is revoked. Sign in again.")
            )
          case "Invalid":
            return yield* Effect.fail(oauthError("invalid_grant", "The refresh token has expired or was revoked."))
        }
      })

    const token = (form: URLSearchParams, authorization: string | undefined) =>
      Effect.gen(function* () {
        const clientId = yield* authenticateClient(form, authorization)
        switch (form.get("grant_type")) {
          case "authorization_code":
            return yield* exchangeCode(form, clientId)
          case "refresh_token":
            return yield* refresh(form, clientId)
          case null:
            return yield* Effect.fail(oauthError("invalid_request", "grant_type is required."))
          default:
            return yield* Effect.fail(
              oauthError("unsupported_grant_type", "Only authorization_code and refresh_token grants are supported.")
            )
        }
      })

    const revoke = (form: URLSearchParams, authorization: string | undefined) =>
      Effect.gen(function* () {
        const clientId = yield* authenticateClient(form, authorization)
        const token = form.get("token")
        if (token === null) return yield* Effect.fail(oauthError("invalid_request", "token is required."))
        const found = yield* orUnavailable(store.findToken(sha256Hex(token)))
        if (found !== undefined && found.grant.clientId === clientId) {
          yield* orUnavailable(Effect.flatMap(now, (at) => store.revokeGrant(found.grant.id, at)))
        }
      })

    const authRequired = (message: string) => Effect.fail(new Errors.AuthRequired({ message }))

    const verify = (accessToken: string) =>
      Effect.gen(function* () {
        const found = yield* store.findToken(sha256Hex(accessToken))
        if (found === undefined || found.token.kind !== "access") {
          return yield* authRequired("The access token is not valid; sign in again.")
        }
        const { grant, token } = found
        const at = yield* now
        if (token.expiresAt.getTime() <= at.getTime()) return yield* authRequired("The access token has expired.")
        if (grant.revokedAt !== null) return yield* authRequired("The access token was revoked; sign in again.")
        if (grant.resource !== s.resource) {
          return yield* authRequired(`The access token was issued for ${grant.resource}, not for ${s.resource}.`)
        }
        const standing = yield* keyStanding(grant)
        if (standing === undefined) {
          return yield* authRequired("The API key this sign-in used has been revoked; sign in again.")
        }
        const scopes = intersect(token.scopes, standing.scopes)
        return {
          caller: { accountId: grant.accountId, apiKeyId: grant.apiKeyId, scopes, keyUsageLimit: standing.usageLimit },
          clientId: grant.clientId,
          scopes,
          expiresAt: token.expiresAt,
          resource: grant.resource
        } satisfies Verified
      }).pipe(
        Effect.catchTag("StoreUnavailable", (error) =>
          Effect.andThen(
            Effect.logWarning("OAuth storage failed while checking an access token", error),
            Effect.fail(new Errors.AuthUnavailable({ message: "Authentication is temporarily unavailable; retry shortly." }))
          )
        )
      )

    return AuthorizationServer.of({
      settings: s,
      register,
      admitAuthorize,
      authorize,
      decide,
      token,
      revoke,
      verify
    })
  })

/** The authorization server over the OAuthStore and Accounts of the context. */
export const layer = (options: Options): Layer.Layer<AuthorizationServer, never, OAuthStore | Accounts.Accounts> =>
  Layer.effect(AuthorizationServer, make(options))
