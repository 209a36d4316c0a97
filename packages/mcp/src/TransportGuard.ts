/**
 * The DNS-rebinding guard of /mcp (MCP Streamable HTTP transport, security warning): a request
 * with an `Origin` outside the allowed origins (the public origin plus configured ones), or a
 * `Host` outside the allowed hosts (the public host, configured ones such as the listen address,
 * and loopback names on any port), is refused, whatever its credentials. No Origin (a client
 * that is not a browser) is allowed; so is no Host.
 */
import { Errors } from "@taskmeter/kernel"

export interface Options {
  /** Origins besides the public one that may call /mcp from a browser, e.g. `https://app.example.com`. */
  readonly allowedOrigins?: ReadonlyArray<string> | undefined
  /** Host header values besides the public host, e.g. the listen address `10.0.0.5:8787`. */
  readonly allowedHosts?: ReadonlyArray<string> | undefined
}

export interface Guard {
  /** PERMISSION_DENIED naming the header at fault, or undefined when the request may proceed. */
  readonly check: (headers: {
    readonly origin?: string | undefined
    readonly host?: string | undefined
  }) => Errors.PermissionDenied | undefined
}

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"])

/** An origin as browsers send it (`scheme://host[:port]`, default port left out); throws when malformed. */
export const normalizeOrigin = (origin: string): string => {
  const url = new URL(origin)
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new Error(`not an http(s) origin: ${origin}`)
  return url.origin
}

/** The hostname of a Host header value (lower case, brackets kept for IPv6), or undefined when malformed. */
const hostnameOf = (host: string): string | undefined => {
  try {
    return new URL(`http://${host}`).hostname
  } catch {
    return undefined
  }
}

const HOST = /^(?:[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/

/** A Host header value as compared (lower case, default port left out), or undefined when it is not `name[:port]`. */
export const normalizeHost = (host: string): string | undefined => {
  if (!HOST.test(host)) return undefined
  try {
    return new URL(`http://${host}`).host
  } catch {
    return undefined
  }
}

/** The guard for a service whose public origin is `publicOrigin`; throws on a malformed configured origin or host. */
export const make = (publicOrigin: string, options: Options = {}): Guard => {
  const origins = new Set([publicOrigin, ...(options.allowedOrigins ?? [])].map(normalizeOrigin))
  const publicUrl = new URL(publicOrigin)
  // The Host of a request to the public origin, with and without its port (a client may send either).
  const hosts = new Set([
    publicUrl.host,
    `${publicUrl.hostname}:${publicUrl.port || (publicUrl.protocol === "https:" ? "443" : "80")}`,
    ...(options.allowedHosts ?? []).map((host) => {
      const normalized = normalizeHost(host)
      if (normalized === undefined) throw new Error(`TransportGuard: ${JSON.stringify(host)} is not a host[:port]`)
      return normalized
    })
  ])
  const denied = (message: string) => new Errors.PermissionDenied({ message })
  return {
    check: ({ origin, host }) => {
      if (host !== undefined) {
        const normalized = normalizeHost(host)
        const hostname = hostnameOf(host)
        if (normalized === undefined || hostname === undefined || (!hosts.has(normalized) && !LOOPBACK.has(hostname))) {
          return denied("This MCP endpoint does not answer requests addressed to that Host.")
        }
      }
      if (origin !== undefined) {
        let normalized: string | undefined
        try {
          normalized = normalizeOrigin(origin)
        } catch {
          normalized = undefined
        }
        if (normalized === undefined || !origins.has(normalized)) {
          return denied("Requests from this Origin are not allowed; the service's operator can allow it (MCP_ALLOWED_ORIGINS).")
        }
      }
      return undefined
    }
  }
}
