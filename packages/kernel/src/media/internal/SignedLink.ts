/**
 * The signed links of MediaUrls and ResultUrls: `<prefix><uuid>?acct=<accountId>&exp=<unix
 * seconds>&sig=<HMAC-SHA256 (base64url) of uuid, account and expiry>`. One implementation, so
 * the parsing and the constant-time comparison that guard both kinds of link cannot drift apart.
 * Links are signed with the current key and checked against it, then the previous one (a key
 * rotation); a link whose expiry lies beyond now + the TTL in force (plus CLOCK_SKEW_MS) is refused.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { Schema } from "effect"
import { AccountId } from "../../domain/Ids.ts"

/** HMAC key material: the configured secret's text, or a key derived from it. */
export type Key = string | Buffer

/**
 * How far a link's expiry may lie past now + TTL: the clocks of the processes that sign and
 * check links (one PostgreSQL, many servers and workers) may differ this much.
 */
export const CLOCK_SKEW_MS = 60_000

export type Verification =
  | { readonly _tag: "Valid"; readonly uuid: string; readonly accountId: AccountId; readonly expiresAt: Date }
  | { readonly _tag: "Expired" }
  | { readonly _tag: "Invalid" }

const isAccountId = Schema.is(AccountId)

const signature = (key: Key, uuid: string, accountId: string, exp: number): string =>
  createHmac("sha256", key).update(`${uuid}\n${accountId}\n${exp}`).digest("base64url")

/** The path and query of a link valid until `expiresAt` (rounded down to the second). */
export const signedPath = (key: Key, prefix: string, uuid: string, accountId: AccountId, expiresAt: Date): string => {
  const exp = Math.floor(expiresAt.getTime() / 1000)
  const query = new URLSearchParams({ acct: accountId, exp: String(exp), sig: signature(key, uuid, accountId, exp) })
  return `${prefix}${uuid}?${query}`
}

/**
 * Checks a link's path and query at `now` against `keys` (the current key first, then any
 * previous one). Anything malformed or altered, a uuid `isUuid` refuses, another prefix, or an
 * expiry more than `ttlMs` (+ CLOCK_SKEW_MS) away is Invalid; the signature is checked before
 * the expiry, so an Expired link is one these keys really signed.
 */
export const verify = (
  keys: ReadonlyArray<Key>,
  prefix: string,
  isUuid: (segment: string) => boolean,
  pathAndQuery: string,
  now: Date,
  ttlMs: number
): Verification => {
  const invalid: Verification = { _tag: "Invalid" }
  let url: URL
  try {
    url = new URL(pathAndQuery, "http://link.invalid")
  } catch {
    return invalid
  }
  if (!url.pathname.startsWith(prefix)) return invalid
  const uuid = url.pathname.slice(prefix.length)
  const accountId = url.searchParams.get("acct")
  const expText = url.searchParams.get("exp")
  const sig = url.searchParams.get("sig")
  if (!isUuid(uuid) || accountId === null || !isAccountId(accountId)) return invalid
  if (expText === null || !/^\d{1,12}$/.test(expText) || sig === null) return invalid
  const exp = Number(expText)
  const given = Buffer.from(sig)
  const signedBy = (key: Key) => {
    const expected = Buffer.from(signature(key, uuid, accountId, exp))
    return given.length === expected.length && timingSafeEqual(given, expected)
  }
  if (!keys.some(signedBy)) return invalid
  // Signed under a longer TTL than the one in force now: it lives no longer than a fresh link would.
  if (exp * 1000 > now.getTime() + ttlMs + CLOCK_SKEW_MS) return invalid
  if (now.getTime() >= exp * 1000) return { _tag: "Expired" }
  return { _tag: "Valid", uuid, accountId, expiresAt: new Date(exp * 1000) }
}
