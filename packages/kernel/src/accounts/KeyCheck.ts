/**
 * The rule an API key must pass for a request: known, not revoked, within its per-minute rate
 * (the request itself counted), holding the scope the request needs.
 *
 * Accounts.authenticate applies it after the store has counted the request; a store that
 * authenticates inside a larger write (a key's TaskStore.admit) applies the same rule before it
 * writes anything else, and Accounts then says why a refused key was refused. Both read it
 * from here, so the two ways cannot disagree.
 */
import { timingSafeEqual } from "node:crypto"
import type { Authenticated } from "./AccountStore.ts"
import type { Scope } from "./Scope.ts"

/** What a store needs to check a key for one request. */
export interface KeyCheck {
  /** Lower-case hex SHA-256 of the presented key. */
  readonly hash: string
  readonly now: Date
  readonly scope: Scope
  /** The rate of keys made without their own `rateLimitPerMinute`. */
  readonly defaultRateLimitPerMinute: number
}

export type Refusal = "UnknownKey" | "Revoked" | "RateLimited" | "MissingScope"

/** Compares two hex hashes in constant time. */
export const sameHash = (storedHex: string, computedHex: string): boolean => {
  const stored = Buffer.from(storedHex, "hex")
  const computed = Buffer.from(computedHex, "hex")
  return stored.length === computed.length && timingSafeEqual(stored, computed)
}

export const rateLimitOf = (found: Authenticated, check: Pick<KeyCheck, "defaultRateLimitPerMinute">): number =>
  found.key.rateLimitPerMinute ?? check.defaultRateLimitPerMinute

/**
 * Why the key the store found (undefined: none) fails the check, in this order; undefined when
 * it passes. Without a scope, any key that passes the rest passes (its scopes are then the
 * caller's to check).
 */
export const refusal = (
  found: Authenticated | undefined,
  check: Omit<KeyCheck, "scope"> & { readonly scope?: Scope | undefined }
): Refusal | undefined => {
  if (found === undefined || !sameHash(found.key.hash, check.hash)) return "UnknownKey"
  if (found.key.revokedAt !== null) return "Revoked"
  if (found.requestsInWindow > rateLimitOf(found, check)) return "RateLimited"
  if (check.scope !== undefined && !found.key.scopes.includes(check.scope)) return "MissingScope"
  return undefined
}
