/**
 * The limit on dynamic client registration (POST /register): anyone may register, so without
 * a limit anyone could fill the client table. Registrations are counted in fixed windows
 * (aligned to the epoch, one hour by default), per source network (20 by default) and in total
 * (1,000 by default); the counts live in the OAuthStore, so every process sharing a database
 * enforces one limit. A refused registration is not counted and is answered 429
 * `too_many_requests` with Retry-After: the seconds left in the window.
 *
 * The source is the address the request came from, an IPv6 one by its /64 network (one
 * subscriber's usual allocation, which holds more addresses than any per-address count could
 * bound). Behind a reverse proxy that address is the proxy's unless the server believes the
 * proxy's `X-Forwarded-For` (the http package's TRUSTED_PROXIES); otherwise every client shares
 * one source, and only the per-source limit's worth of registrations fits in a window.
 */
import { Option, Result } from "effect"
import { IpNetwork, NetAddress } from "effect/net"
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

/** The source a request is counted against: an IPv4 address, an IPv6 /64, or `unknown`. */
export const sourceOf = (remoteAddress: string | undefined): string => {
  const parsed = remoteAddress === undefined ? undefined : NetAddress.ipFromString(remoteAddress)
  if (parsed === undefined || Result.isFailure(parsed)) return "unknown"
  const address = parsed.success
  if (NetAddress.isIpv4Address(address)) return NetAddress.formatIp(address)
  const mapped = NetAddress.fromIpv4Mapped(address)
  if (Option.isSome(mapped)) return NetAddress.formatIp(mapped.value)
  return IpNetwork.format(Result.getOrThrow(IpNetwork.fromAddress(address, 64)))
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
