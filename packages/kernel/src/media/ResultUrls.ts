/**
 * Signed result links: how a client without an API key (an MCP host signed in with OAuth)
 * downloads one result of its account. `sign` gives `/api/v1/result-links/<uuid>?acct&exp&sig`,
 * signed as media links are but under a key derived for this purpose alone; `verify` answers
 * Valid, Expired or Invalid before any store is read. Policy: docs/decisions.md (HTTP API;
 * Hostile input, signed links).
 */
import { createHmac } from "node:crypto"
import { Clock, Context, Effect, Layer, Redacted } from "effect"
import { type AccountId, isResultId, type ResultId } from "../domain/Ids.ts"
import * as SignedLink from "./internal/SignedLink.ts"
import type * as MediaUrls from "./MediaUrls.ts"

export const PATH_PREFIX = "/api/v1/result-links/"

export const DEFAULT_TTL_MS = 60 * 60 * 1000

export interface Options {
  /** The media-link secret (at least 32 characters); rotating it voids the links given out, unless the old one is `previousSecret`. */
  readonly secret: Redacted.Redacted<string>
  /** The media-link secret before the last rotation: links it signed are still accepted, never signed. */
  readonly previousSecret?: Redacted.Redacted<string> | undefined
  readonly ttlMs?: number | undefined
}

export interface Link {
  /** `/api/v1/result-links/<uuid>?acct=..&exp=..&sig=..`, to put on the service's public origin. */
  readonly path: string
  readonly expiresAt: Date
}

export type Verification =
  | { readonly _tag: "Valid"; readonly accountId: AccountId; readonly resultId: ResultId; readonly expiresAt: Date }
  | { readonly _tag: "Expired" }
  | { readonly _tag: "Invalid" }

export class ResultUrls extends Context.Service<
  ResultUrls,
  {
    /** A link to the account's result, valid for the configured time from now. */
    readonly sign: (accountId: AccountId, resultId: ResultId) => Effect.Effect<Link>
    /** Checks a request's path and query (e.g. `/api/v1/result-links/<uuid>?acct=..&exp=..&sig=..`). */
    readonly verify: (pathAndQuery: string) => Effect.Effect<Verification>
  }
>()("@taskmeter/kernel/ResultUrls") {}

/** The key result links are signed with: the secret's HMAC of this purpose's name. */
export const keyOf = (secret: Redacted.Redacted<string>): Buffer =>
  createHmac("sha256", Redacted.value(secret)).update("taskmeter result links").digest()

/** The path and query of a link to `resultId` valid until `expiresAt` (rounded down to the second). */
export const signedPath = (
  secret: Redacted.Redacted<string>,
  accountId: AccountId,
  resultId: ResultId,
  expiresAt: Date
): string => SignedLink.signedPath(keyOf(secret), PATH_PREFIX, resultId, accountId, expiresAt)

/**
 * Checks a link's path and query at `now` against `secrets` (current first); any tampering, a
 * link not of this form, or one expiring more than `ttlMs` from now is Invalid.
 */
export const verify = (secrets: MediaUrls.Secrets, pathAndQuery: string, now: Date, ttlMs = DEFAULT_TTL_MS): Verification => {
  const keys = (Redacted.isRedacted(secrets) ? [secrets] : secrets).map(keyOf)
  const link = SignedLink.verify(keys, PATH_PREFIX, isResultId, pathAndQuery, now, ttlMs)
  return link._tag === "Valid"
    ? { _tag: "Valid", accountId: link.accountId, resultId: link.uuid as ResultId, expiresAt: link.expiresAt }
    : link
}

/** Throws on a secret (current or previous) shorter than 32 characters or a ttl under one second. */
export const make = (options: Options): ResultUrls["Service"] => {
  const secrets = options.previousSecret === undefined ? [options.secret] : [options.secret, options.previousSecret]
  if (secrets.some((secret) => Redacted.value(secret).length < 32)) {
    throw new RangeError("ResultUrls: the signing secret must be at least 32 characters")
  }
  const ttlMs = options.ttlMs ?? DEFAULT_TTL_MS
  if (!(ttlMs >= 1000)) throw new RangeError("ResultUrls: links must live at least one second")
  return ResultUrls.of({
    sign: (accountId, resultId) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        // Whole seconds, as the link states its expiry.
        const expiresAt = new Date(Math.floor((now + ttlMs) / 1000) * 1000)
        return { path: signedPath(options.secret, accountId, resultId, expiresAt), expiresAt }
      }),
    verify: (pathAndQuery) => Effect.map(Clock.currentTimeMillis, (now) => verify(secrets, pathAndQuery, new Date(now), ttlMs))
  })
}

export const layer = (options: Options): Layer.Layer<ResultUrls> => Layer.sync(ResultUrls, () => make(options))
