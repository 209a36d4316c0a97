/**
 * Storage port of the built-in OAuth authorization server: clients, sign-ins in progress, codes,
 * grants with their token families, one-time sign-in codes and the registration and request counts.
 * Secrets are kept only as SHA-256 hex. Across processes, each method is one atomic unit judged at
 * the caller's `now`: one winner per sign-in, code redemption (a second revokes the grant), refresh
 * rotation (reuse revokes) and sign-in code, and counts within their limits. Implementations: `OAuthStoreLayers.layerMemory`, `OAuthStorePg`.
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { Ids, Scope, StoreError } from "@taskmeter/kernel"

type StoreUnavailable = StoreError.StoreUnavailable

/** How a client proves itself at the token and revocation endpoints. */
export type TokenEndpointAuthMethod = "none" | "client_secret_post" | "client_secret_basic"

/** A client registered through dynamic client registration (RFC 7591). */
export interface RegisteredClient {
  readonly clientId: string
  /** SHA-256 of the client secret; null for a public client (`none`). */
  readonly secretHash: string | null
  readonly tokenEndpointAuthMethod: TokenEndpointAuthMethod
  readonly redirectUris: ReadonlyArray<string>
  /** Self-asserted by the client; the sign-in page says so. */
  readonly clientName: string | null
  /** The registration response's metadata members, kept to answer with them again. */
  readonly metadata: { readonly [member: string]: unknown }
  readonly createdAt: Date
  /**
   * When the registration is deleted unless a sign-in through it has completed by then (its
   * first code redemption sets this to null, and the client is kept).
   */
  readonly unusedExpiresAt: Date | null
}

/** An authorization request that passed validation and waits for the account owner's answer. */
export interface PendingAuthorization {
  readonly id: string
  /** SHA-256 of the CSRF token the sign-in page carries. */
  readonly csrfHash: string
  readonly clientId: string
  readonly clientName: string | null
  /** Whether `clientName` was read from the client's own metadata document (CIMD) rather than self-asserted at registration. */
  readonly clientVerified: boolean
  readonly redirectUri: string
  readonly state: string | null
  /** PKCE S256 challenge. */
  readonly codeChallenge: string
  readonly scopes: ReadonlyArray<Scope.Scope>
  readonly resource: string
  readonly failedAttempts: number
  readonly createdAt: Date
  readonly expiresAt: Date
}

/** An issued authorization code, single use. */
export interface AuthorizationCode {
  readonly hash: string
  /** The grant its redemption creates, chosen up front so that a second redemption can revoke it. */
  readonly grantId: string
  readonly clientId: string
  readonly redirectUri: string
  readonly codeChallenge: string
  readonly accountId: Ids.AccountId
  /** The API key the owner signed in with (its scopes bound the grant); null for a sign-in code. */
  readonly apiKeyId: Ids.ApiKeyId | null
  readonly scopes: ReadonlyArray<Scope.Scope>
  readonly resource: string
  readonly createdAt: Date
  readonly expiresAt: Date
  readonly redeemedAt: Date | null
}

export interface Grant {
  readonly id: string
  readonly clientId: string
  readonly accountId: Ids.AccountId
  readonly apiKeyId: Ids.ApiKeyId | null
  /** The most any token of the grant may carry. */
  readonly scopes: ReadonlyArray<Scope.Scope>
  /** The RFC 8707 resource (audience) every token of the grant is bound to. */
  readonly resource: string
  readonly createdAt: Date
  readonly revokedAt: Date | null
}

export type TokenKind = "access" | "refresh"

export interface TokenRecord {
  readonly hash: string
  readonly kind: TokenKind
  readonly grantId: string
  readonly scopes: ReadonlyArray<Scope.Scope>
  readonly createdAt: Date
  readonly expiresAt: Date
  /** Refresh tokens only: when it was exchanged for the next pair. */
  readonly rotatedAt: Date | null
}

/** The hashes and lifetimes of a new access and refresh token pair. */
export interface NewTokens {
  readonly accessHash: string
  readonly accessExpiresAt: Date
  readonly refreshHash: string
  readonly refreshExpiresAt: Date
  readonly scopes: ReadonlyArray<Scope.Scope>
}

export type CodeRedemption =
  | { readonly _tag: "Redeemed"; readonly grant: Grant }
  /** The code had been redeemed before; its grant is now revoked. */
  | { readonly _tag: "AlreadyRedeemed" }
  /** Unknown or expired. */
  | { readonly _tag: "Invalid" }

export type Rotation =
  | { readonly _tag: "Rotated" }
  /** The token had been rotated before; its grant is now revoked. */
  | { readonly _tag: "Reused" }
  /** Unknown, not a refresh token, expired, or its grant is revoked. */
  | { readonly _tag: "Invalid" }

export interface SignInCode {
  readonly hash: string
  readonly accountId: Ids.AccountId
  readonly createdAt: Date
  readonly expiresAt: Date
}

/**
 * One registration asking to be counted in the fixed window `[start, end)`: against its
 * source's count (at most `perSource`) and the count of every source (at most `total`).
 */
export interface RegistrationWindow {
  /** Where the request came from: an IPv4 address, an IPv6 /64 network, or `unknown`. */
  readonly source: string
  readonly start: Date
  readonly end: Date
  readonly perSource: number
  readonly total: number
}

export type RegistrationAdmission =
  | { readonly _tag: "Admitted" }
  /** Refused, and not counted: the source's or the total count of the window is full. */
  | { readonly _tag: "Limited"; readonly by: "source" | "total" }

/** One request asking to be counted in `bucket`'s fixed window `[start, end)`, of at most `limit`. */
export interface RequestWindow {
  /** What is counted and for whom, e.g. `authorize 203.0.113.7`; never a registration source. */
  readonly bucket: string
  readonly start: Date
  readonly end: Date
  readonly limit: number
}

/** A sign-in of an account that can still be used: a grant with a live refresh token. */
export interface ActiveGrant {
  readonly grant: Grant
  /** The registered client's name; null when it gave none or is identified by a metadata document. */
  readonly clientName: string | null
  /** When its newest tokens were issued: the sign-in, or its latest refresh. */
  readonly lastIssuedAt: Date
  /** When its live refresh token expires, unless refreshed before. */
  readonly refreshExpiresAt: Date
}

export class OAuthStore extends Context.Service<
  OAuthStore,
  {
    readonly insertClient: (client: RegisteredClient) => Effect.Effect<void, StoreUnavailable>
    readonly getClient: (clientId: string) => Effect.Effect<RegisteredClient | undefined, StoreUnavailable>

    readonly insertPending: (pending: PendingAuthorization) => Effect.Effect<void, StoreUnavailable>
    /** undefined when unknown or expired at `now`. */
    readonly getPending: (id: string, now: Date) => Effect.Effect<PendingAuthorization | undefined, StoreUnavailable>
    /** Counts one refused sign-in; the new count, or undefined when the sign-in is gone. */
    readonly recordFailedAttempt: (id: string, now: Date) => Effect.Effect<number | undefined, StoreUnavailable>
    /** Removes the sign-in and returns it, to exactly one caller; undefined when gone or expired. */
    readonly takePending: (id: string, now: Date) => Effect.Effect<PendingAuthorization | undefined, StoreUnavailable>

    readonly insertCode: (code: AuthorizationCode) => Effect.Effect<void, StoreUnavailable>
    /** The code as stored (even when redeemed), so its bindings can be checked before redeeming. */
    readonly getCode: (hash: string) => Effect.Effect<AuthorizationCode | undefined, StoreUnavailable>
    /**
     * Redeems the code at `now`: creates the grant `code.grantId` and the given tokens in it, and
     * marks its registered client as used (`unusedExpiresAt` null). A redeemed code revokes that
     * grant instead; an expired or unknown one changes nothing.
     */
    readonly redeemCode: (hash: string, now: Date, tokens: NewTokens) => Effect.Effect<CodeRedemption, StoreUnavailable>

    /** The token and its grant, whatever their state (the caller judges expiry and revocation). */
    readonly findToken: (
      hash: string
    ) => Effect.Effect<{ readonly token: TokenRecord; readonly grant: Grant } | undefined, StoreUnavailable>
    /**
     * Exchanges a live refresh token for the next pair in the same grant. A rotated token
     * revokes the grant; an expired one, or one of a revoked grant, is Invalid.
     */
    readonly rotateRefresh: (hash: string, now: Date, next: NewTokens) => Effect.Effect<Rotation, StoreUnavailable>
    /** Revokes the grant and so every token of it; false when unknown or already revoked. */
    readonly revokeGrant: (grantId: string, now: Date) => Effect.Effect<boolean, StoreUnavailable>
    /** The grant, whatever its state; undefined when unknown (or purged). */
    readonly getGrant: (grantId: string) => Effect.Effect<Grant | undefined, StoreUnavailable>
    /**
     * The account's grants that are not revoked and hold a refresh token neither rotated nor
     * expired at `now`, newest first.
     */
    readonly listActiveGrants: (
      accountId: Ids.AccountId,
      now: Date
    ) => Effect.Effect<ReadonlyArray<ActiveGrant>, StoreUnavailable>

    readonly insertSignInCode: (code: SignInCode) => Effect.Effect<void, StoreUnavailable>
    /** The account of a live, unused sign-in code, which is used up by this call. */
    readonly redeemSignInCode: (hash: string, now: Date) => Effect.Effect<Ids.AccountId | undefined, StoreUnavailable>

    /** Counts the registration if both of the window's counts have room. */
    readonly admitRegistration: (window: RegistrationWindow) => Effect.Effect<RegistrationAdmission, StoreUnavailable>
    /** Counts the request if its window's count is below the limit; false (not counted) when full. */
    readonly admitRequest: (window: RequestWindow) => Effect.Effect<boolean, StoreUnavailable>

    /**
     * Deletes what can no longer be used at `now`: expired sign-ins, codes and sign-in codes,
     * expired tokens, grants left without a live token, registration and request counts of ended windows,
     * and clients past `unusedExpiresAt` with no sign-in or code left in progress. Returns how
     * many records went.
     */
    readonly purgeExpired: (now: Date) => Effect.Effect<number, StoreUnavailable>
  }
>()("@taskmeter/mcp/OAuthStore") {}
