/**
 * The limit on dynamic client registration (POST /register): counts in fixed epoch-aligned windows
 * (one hour), per source (ClientSource.sourceOf: an address, IPv6 by its /64; 20) and in total (1,000), kept in the
 * OAuthStore so processes sharing a database enforce one limit. A refused registration is not
 * counted and is 429 `too_many_requests` with Retry-After. The source is the proxy's address unless
 * TRUSTED_PROXIES believes its X-Forwarded-For. Policy: docs/decisions.md, MCP.
 */
import type { RegistrationWindow } from "./OAuthStore.ts"

export interface Options {
  readonly windowSeconds: number
  /** Registrations per source network in a window. */
  readonly perSource: number
  /** Registrations from all sources together in a window. */
  readonly total: number
}

export const defaults: Options = { windowSeconds: 3600, perSource: 20, total: 1000 }

/** The options, checked; throws on a count that is not a positive integer (a configuration defect). */
export const resolve = (options: Partial<Options> | undefined): Options => {
  const resolved = { ...defaults, ...options }
  for (const [name, value] of Object.entries(resolved)) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new Error(`AuthorizationServer: registrationLimit.${name} must be a positive integer, got ${value}`)
    }
  }
  return resolved
}

/** The window `now` falls in, for a registration from `source`. */
export const windowAt = (now: Date, source: string, options: Options): RegistrationWindow => {
  const length = options.windowSeconds * 1000
  const start = Math.floor(now.getTime() / length) * length
  return { source, start: new Date(start), end: new Date(start + length), perSource: options.perSource, total: options.total }
}

/** Whole seconds until the window ends, at least one. */
export const retryAfterSeconds = (window: RegistrationWindow, now: Date): number =>
  Math.max(1, Math.ceil((window.end.getTime() - now.getTime()) / 1000))
