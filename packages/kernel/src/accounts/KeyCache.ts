/**
 * Verified API keys kept in this process's memory for Accounts.authenticateCached: an entry is
 * the key's record as the store last returned it, keyed by the key's hash (never the key), used
 * for `ttlMs` after that read, with the key's one-minute request window counted here. At most
 * `maxEntries` keys are kept; the least recently verified goes first.
 */
import type { Authenticated } from "./AccountStore.ts"
import type { ApiKeyId } from "../domain/Ids.ts"

const WINDOW_MS = 60_000

interface Entry {
  readonly found: Authenticated
  readonly verifiedUntilMs: number
}

export interface KeyCache {
  /** The key with this hash counted for one more request at `nowMs`, if verified within the TTL. */
  readonly count: (hash: string, nowMs: number) => Authenticated | undefined
  /**
   * Keeps what the store just returned for this hash (the request already counted by the store).
   * Within a window this process was already counting, the count is the larger of the two.
   */
  readonly verified: (hash: string, found: Authenticated, nowMs: number) => Authenticated
  /** Forgets the key at once (revoked in this process). */
  readonly forget: (keyId: ApiKeyId) => void
}

export const make = (options: { readonly ttlMs: number; readonly maxEntries: number }): KeyCache => {
  const entries = new Map<string, Entry>()

  const keep = (hash: string, entry: Entry) => {
    entries.delete(hash)
    if (entries.size >= options.maxEntries) {
      const oldest = entries.keys().next()
      if (oldest.done !== true) entries.delete(oldest.value)
    }
    entries.set(hash, entry)
  }

  return {
    count: (hash, nowMs) => {
      const entry = entries.get(hash)
      if (entry === undefined || nowMs >= entry.verifiedUntilMs) return undefined
      const running = nowMs < entry.found.windowResetsAt.getTime()
      const found: Authenticated = running
        ? { ...entry.found, requestsInWindow: entry.found.requestsInWindow + 1 }
        : { ...entry.found, requestsInWindow: 1, windowResetsAt: new Date(nowMs + WINDOW_MS) }
      entries.set(hash, { ...entry, found })
      return found
    },
    verified: (hash, found, nowMs) => {
      const before = entries.get(hash)?.found
      const counted =
        before !== undefined && nowMs < before.windowResetsAt.getTime()
          ? {
              ...found,
              requestsInWindow: Math.max(before.requestsInWindow + 1, found.requestsInWindow),
              windowResetsAt: before.windowResetsAt
            }
          : found
      if (options.ttlMs > 0) keep(hash, { found: counted, verifiedUntilMs: nowMs + options.ttlMs })
      return counted
    },
    forget: (keyId) => {
      for (const [hash, entry] of entries) if (entry.found.key.id === keyId) entries.delete(hash)
    }
  }
}
