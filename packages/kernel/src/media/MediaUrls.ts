/**
 * Signed media links: how an upstream fetches a caller's upload without the caller's credentials.
 * `sign` gives `<baseUrl>/api/v1/media-links/<uuid>?acct&exp&sig` (HMAC-SHA256 over uuid, account
 * and expiry; one hour by default); `verify` answers Valid, Expired or Invalid, accepting
 * `previousSecret` and refusing expiries beyond the TTL in force. Policy: docs/decisions.md
 * (Tasks and providers; Hostile input, signed links).
 */
import { Clock, Context, Effect, Layer, Redacted } from "effect"
import type { AccountId } from "../domain/Ids.ts"
import * as SignedLink from "./internal/SignedLink.ts"
import * as MediaReference from "./MediaReference.ts"

export const PATH_PREFIX = "/api/v1/media-links/"

export const DEFAULT_TTL_MS = 60 * 60 * 1000

export interface Options {
  /** The public origin an upstream reaches this service at, e.g. https://api.example.com. */
  readonly baseUrl: string
  /** At least 32 characters; rotating it voids the links given out, unless the old one is `previousSecret`. */
  readonly secret: Redacted.Redacted<string>
  /** The secret before the last rotation: links it signed are still accepted, never signed. */
  readonly previousSecret?: Redacted.Redacted<string> | undefined
  readonly ttlMs?: number | undefined
}

/** The secrets a link is checked against: the current one, then the previous one. */
export type Secrets = Redacted.Redacted<string> | ReadonlyArray<Redacted.Redacted<string>>

const secretsOf = (secrets: Secrets): ReadonlyArray<Redacted.Redacted<string>> =>
  Redacted.isRedacted(secrets) ? [secrets] : secrets

export type Verification =
  | { readonly _tag: "Valid"; readonly accountId: AccountId; readonly reference: MediaReference.MediaReference }
  | { readonly _tag: "Expired" }
  | { readonly _tag: "Invalid" }

export class MediaUrls extends Context.Service<
  MediaUrls,
  {
    /** A link to the account's upload, valid for the configured time from now. */
    readonly sign: (accountId: AccountId, reference: MediaReference.MediaReference) => Effect.Effect<string>
    /** Checks a request's path and query (e.g. `/api/v1/media-links/<uuid>?acct=..&exp=..&sig=..`). */
    readonly verify: (pathAndQuery: string) => Effect.Effect<Verification>
  }
>()("@taskmeter/kernel/MediaUrls") {}

const isUploadUuid = (uuid: string): boolean => MediaReference.isMediaReference(`media:${uuid}`)

/** The path and query of a link to `reference` valid until `expiresAt` (rounded down to the second). */
export const signedPath = (
  secret: Redacted.Redacted<string>,
  accountId: AccountId,
  reference: MediaReference.MediaReference,
  expiresAt: Date
): string => SignedLink.signedPath(Redacted.value(secret), PATH_PREFIX, MediaReference.uuidOf(reference), accountId, expiresAt)

/**
 * Checks a link's path and query at `now` against `secrets`; any tampering, a link not of this
 * form, or one expiring more than `ttlMs` from now is Invalid.
 */
export const verify = (secrets: Secrets, pathAndQuery: string, now: Date, ttlMs = DEFAULT_TTL_MS): Verification => {
  const keys = secretsOf(secrets).map((secret) => Redacted.value(secret))
  const link = SignedLink.verify(keys, PATH_PREFIX, isUploadUuid, pathAndQuery, now, ttlMs)
  return link._tag === "Valid"
    ? { _tag: "Valid", accountId: link.accountId, reference: `media:${link.uuid}` as MediaReference.MediaReference }
    : link
}

/** Throws on a secret (current or previous) shorter than 32 characters, a base URL that does not parse, or a ttl under one second. */
export const make = (options: Options): MediaUrls["Service"] => {
  const secrets = options.previousSecret === undefined ? [options.secret] : [options.secret, options.previousSecret]
  if (secrets.some((secret) => Redacted.value(secret).length < 32)) {
    throw new RangeError("MediaUrls: the signing secret must be at least 32 characters")
  }
  const origin = new URL(options.baseUrl).href.replace(/\/+$/, "")
  const ttlMs = options.ttlMs ?? DEFAULT_TTL_MS
  if (!(ttlMs >= 1000)) throw new RangeError("MediaUrls: links must live at least one second")
  return MediaUrls.of({
    sign: (accountId, reference) =>
      Effect.map(
        Clock.currentTimeMillis,
        (now) => `${origin}${signedPath(options.secret, accountId, reference, new Date(now + ttlMs))}`
      ),
    verify: (pathAndQuery) => Effect.map(Clock.currentTimeMillis, (now) => verify(secrets, pathAndQuery, new Date(now), ttlMs))
  })
}

export const layer = (options: Options): Layer.Layer<MediaUrls> => Layer.sync(MediaUrls, () => make(options))
