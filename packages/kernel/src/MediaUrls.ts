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
import { createHmac, timingSafeEqual } from "node:crypto"
import { Clock, Context, Effect, Layer, Redacted, Schema } from "effect"
import { AccountId } from "./Ids.ts"
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

const isAccountId = Schema.is(AccountId)

const signature = (secret: Redacted.Redacted<string>, uuid: string, accountId: string, exp: number): string =>
  createHmac("sha256", Redacted.value(secret)).update(`${uuid}\n${accountId}\n${exp}`).digest("base64url")

/** The path and query of a link to `reference` valid until `expiresAt` (rounded down to the second). */
export const signedPath = (
  secret: Redacted.Redacted<string>,
  accountId: AccountId,
  reference: MediaReference.MediaReference,
  expiresAt: Date
): string => {
  const uuid = MediaReference.uuidOf(reference)
  const exp = Math.floor(expiresAt.getTime() / 1000)
  const query = new URLSearchParams({ acct: accountId, exp: String(exp), sig: signature(secret, uuid, accountId, exp) })
  return `${PATH_PREFIX}${uuid}?${query}`
}

/** Checks a link's path and query at `now`; any tampering, or a link not of this form, is Invalid. */
export const verify = (secret: Redacted.Redacted<string>, pathAndQuery: string, now: Date): Verification => {
  const invalid: Verification = { _tag: "Invalid" }
  let url: URL
  try {
    url = new URL(pathAndQuery, "http://link.invalid")
  } catch {
    return invalid
  }
  if (!url.pathname.startsWith(PATH_PREFIX)) return invalid
  const reference = `media:${url.pathname.slice(PATH_PREFIX.length)}`
  const accountId = url.searchParams.get("acct")
  const expText = url.searchParams.get("exp")
  const sig = url.searchParams.get("sig")
  if (!MediaReference.isMediaReference(reference) || accountId === null || !isAccountId(accountId)) return invalid
  if (expText === null || !/^\d{1,12}$/.test(expText) || sig === null) return invalid
  const exp = Number(expText)
  const expected = Buffer.from(signature(secret, MediaReference.uuidOf(reference), accountId, exp))
  const given = Buffer.from(sig)
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return invalid
  if (now.getTime() >= exp * 1000) return { _tag: "Expired" }
  return { _tag: "Valid", accountId, reference }
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
