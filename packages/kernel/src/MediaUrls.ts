/**
 * Signed media links: how an upstream fetches a caller's upload (`media:<uuid>`) without any of
 * the caller's credentials. The worker replaces each media reference of a task's input with
 *
 *   <baseUrl>/api/v1/media-links/<uuid>?acct=<accountId>&exp=<unix seconds>&sig=<signature>
 *
 * where the signature is an HMAC-SHA256 (base64url) over the uuid, the owning account and the
 * expiry, under a server secret. The link names the account because uploads are stored per
 * account (MediaStore reads are account-scoped); it carries no key and grants nothing else.
 * It is short-lived (one hour by default: long enough for an upstream that queues the job a
 * while before fetching its inputs) and only as secret as the upstream keeps it.
 *
 * The http package serves the route: it calls `verify` with the request's path and query and,
 * for a Valid link, streams the upload of that account; Expired and Invalid are both a 404 to
 * the outside, so a link reveals nothing once it stops working.
 *
 * `baseUrl` is the public origin the upstream can reach; it should be https in production
 * (upstreams refuse or cannot reach anything else) but is not forced, for local runs.
 *
 * @example
 * ```ts
 * const links = MediaUrls.layer({ baseUrl: "https://api.example.com", secret: Redacted.make(secret) })
 * // route: const result = yield* (yield* MediaUrls.MediaUrls).verify(request.url)
 * ```
 */
import { Clock, Context, Effect, Layer, Redacted } from "effect"
import type { AccountId } from "./Ids.ts"
import * as SignedLink from "./internal/SignedLink.ts"
import * as MediaReference from "./MediaReference.ts"

export const PATH_PREFIX = "/api/v1/media-links/"

export const DEFAULT_TTL_MS = 60 * 60 * 1000

export interface Options {
  /** The public origin an upstream reaches this service at, e.g. https://api.example.com. */
  readonly baseUrl: string
  /** At least 32 characters; rotating it voids the links given out. */
  readonly secret: Redacted.Redacted<string>
  readonly ttlMs?: number | undefined
}

export type Verification =
  | { readonly _tag: "Valid"; readonly accountId: AccountId; readonly reference: MediaReference.MediaReference }
  | { readonly _tag: "Expired" }
  | { readonly _tag: "Invalid" }

export class MediaUrls extends Context.Service<MediaUrls, {
  /** A link to the account's upload, valid for the configured time from now. */
  readonly sign: (accountId: AccountId, reference: MediaReference.MediaReference) => Effect.Effect<string>
  /** Checks a request's path and query (e.g. `/api/v1/media-links/<uuid>?acct=..&exp=..&sig=..`). */
  readonly verify: (pathAndQuery: string) => Effect.Effect<Verification>
}>()("@taskmeter/kernel/MediaUrls") {}

const isUploadUuid = (uuid: string): boolean => MediaReference.isMediaReference(`media:${uuid}`)

/** The path and query of a link to `reference` valid until `expiresAt` (rounded down to the second). */
export const signedPath = (
  secret: Redacted.Redacted<string>,
  accountId: AccountId,
  reference: MediaReference.MediaReference,
  expiresAt: Date
): string => SignedLink.signedPath(Redacted.value(secret), PATH_PREFIX, MediaReference.uuidOf(reference), accountId, expiresAt)

/** Checks a link's path and query at `now`; any tampering, or a link not of this form, is Invalid. */
export const verify = (secret: Redacted.Redacted<string>, pathAndQuery: string, now: Date): Verification => {
  const link = SignedLink.verify(Redacted.value(secret), PATH_PREFIX, isUploadUuid, pathAndQuery, now)
  return link._tag === "Valid"
    ? { _tag: "Valid", accountId: link.accountId, reference: `media:${link.uuid}` as MediaReference.MediaReference }
    : link
}

/** Throws on a secret shorter than 32 characters, a base URL that does not parse, or a ttl under one second. */
export const make = (options: Options): MediaUrls["Service"] => {
  if (Redacted.value(options.secret).length < 32) {
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
    verify: (pathAndQuery) =>
      Effect.map(Clock.currentTimeMillis, (now) => verify(options.secret, pathAndQuery, new Date(now)))
  })
}

export const layer = (options: Options): Layer.Layer<MediaUrls> => Layer.sync(MediaUrls, () => make(options))
