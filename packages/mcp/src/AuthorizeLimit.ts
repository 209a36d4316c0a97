/**
 * The limit on /authorize (the sign-in page and its answers): per client address, like
 * registrations (ClientSource.sourceOf: an IPv4 address or an IPv6 /64, as the server
 * sees it, TRUSTED_PROXIES included), 30 requests per fixed one-minute window by default,
 * counted in the OAuthStore so every process shares one limit. Past it: 429 with Retry-After.
 */
import { ClientSource } from "@taskmeter/kernel"
import type { RequestWindow } from "./OAuthStore.ts"

export interface Options {
  readonly windowSeconds: number
  /** Requests per source network in a window. */
  readonly perSource: number
}

export const defaults: Options = { windowSeconds: 60, perSource: 30 }

/** The options, checked; throws on a count that is not a positive integer (a configuration defect). */
export const resolve = (options: Partial<Options> | undefined): Options => {
  const resolved = { ...defaults, ...options }
  for (const [name, value] of Object.entries(resolved)) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new Error(`AuthorizationServer: authorizeLimit.${name} must be a positive integer, got ${value}`)
    }
  }
  return resolved
}

/** The window `now` falls in, for a request to /authorize from `remoteAddress`. */
export const windowAt = (now: Date, remoteAddress: string | undefined, options: Options): RequestWindow => {
  const length = options.windowSeconds * 1000
  const start = Math.floor(now.getTime() / length) * length
  return {
    bucket: `authorize ${ClientSource.sourceOf(remoteAddress)}`,
    start: new Date(start),
    end: new Date(start + length),
    limit: options.perSource
  }
}

/** Whole seconds until the window ends, at least one. */
export const retryAfterSeconds = (window: RequestWindow, now: Date): number =>
  Math.max(1, Math.ceil((window.end.getTime() - now.getTime()) / 1000))
