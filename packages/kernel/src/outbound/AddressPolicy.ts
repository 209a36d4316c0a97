/**
 * Where a fetch on someone else's behalf (a URL a caller sent, or one an upstream answered) may
 * connect: https to a host whose every address is public unicast, with no credentials in the
 * URL. `urlProblem` is the syntactic check (no DNS); `resolveChecked` adds the resolution, and
 * `PublicFetch` connects only to the addresses it checked. Operator-configured URLs are not judged.
 */
import { Context, Result } from "effect"
import { IpNetwork, NetAddress } from "effect/net"
import type { LookupAddress } from "node:dns"
import { lookup } from "node:dns/promises"
import { isIP } from "node:net"

/** Every address of a host name (both families); rejects when the name does not resolve. */
export type Resolve = (hostname: string) => Promise<ReadonlyArray<LookupAddress>>

export interface Policy {
  readonly resolve: Resolve
  /**
   * Tests only: loopback addresses and names (`localhost`) are allowed too, and plain http to
   * them, so tests can serve results from a local server. Set in code, never from configuration.
   */
  readonly allowLoopbackForTests: boolean
}

/** The system's resolver (getaddrinfo, as connections use it). */
export const systemResolve: Resolve = (hostname) => lookup(hostname, { all: true, order: "verbatim" })

/** Public unicast only, through the system's resolver. */
export const publicOnly: Policy = { resolve: systemResolve, allowLoopbackForTests: false }

/** The policy in force: `publicOnly` unless a layer provides another (tests). */
export const AddressPolicy = Context.Reference<Policy>("@taskmeter/kernel/AddressPolicy", { defaultValue: () => publicOnly })

// ---------------------------------------------------------------------------------------------
// IP addresses
// ---------------------------------------------------------------------------------------------

const networks = (cidrs: ReadonlyArray<string>) => cidrs.map(IpNetwork.fromStringUnsafe)

/**
 * IPv4 refused: this network, private use, shared address space (CGNAT), loopback, link-local
 * (the 169.254.169.254 metadata service among them), IETF protocol assignments, documentation,
 * the 6to4 relay anycast, benchmarking, multicast, reserved space and broadcast.
 */
const NOT_PUBLIC_V4 = networks([
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.88.99.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4",
  "240.0.0.0/4"
])

/**
 * IPv6: only global unicast (2000::/3), which leaves out loopback, unspecified, unique-local
 * (fd00:ec2::254, the EC2 metadata service, among them), link-local, site-local and multicast;
 * within it IETF protocol assignments (Teredo among them) and documentation are refused too.
 */
const GLOBAL_UNICAST = IpNetwork.fromStringUnsafe("2000::/3")
const NOT_PUBLIC_V6 = networks(["2001::/23", "2001:db8::/32", "3fff::/20"])
const NAT64 = IpNetwork.fromStringUnsafe("64:ff9b::/96")
const SIX_TO_FOUR = IpNetwork.fromStringUnsafe("2002::/16")

/** The IPv4 address an IPv6 one carries (IPv4-mapped, NAT64, 6to4), judged in its place. */
const carriedIpv4 = (address: NetAddress.Ipv6Address): NetAddress.Ipv4Address | undefined => {
  const octets = Uint8Array.from(NetAddress.ipv6ToOctets(address))
  if (NetAddress.isIpv4Mapped(address) || IpNetwork.contains(NAT64, address))
    return NetAddress.ipv4FromBytesUnsafe(octets.subarray(12))
  if (IpNetwork.contains(SIX_TO_FOUR, address)) return NetAddress.ipv4FromBytesUnsafe(octets.subarray(2, 6))
  return undefined
}

const isPublicIp = (address: NetAddress.IpAddress): boolean => {
  if (NetAddress.isIpv4Address(address)) return !NOT_PUBLIC_V4.some((network) => IpNetwork.contains(network, address))
  const carried = carriedIpv4(address)
  if (carried !== undefined) return isPublicIp(carried)
  return IpNetwork.contains(GLOBAL_UNICAST, address) && !NOT_PUBLIC_V6.some((network) => IpNetwork.contains(network, address))
}

/** Whether `text` is a plain IP address (no scope, no brackets) that may be connected to. */
export const isPublicAddress = (text: string): boolean => {
  const parsed = NetAddress.ipFromString(text)
  return Result.isSuccess(parsed) && isPublicIp(parsed.success)
}

/** Whether `text` is a loopback address (127/8, ::1, or 127/8 carried in IPv6). */
export const isLoopbackAddress = (text: string): boolean => {
  const parsed = NetAddress.ipFromString(text)
  if (Result.isFailure(parsed)) return false
  const address = parsed.success
  const v4 = NetAddress.isIpv6Address(address) ? carriedIpv4(address) : undefined
  return NetAddress.isLoopback(v4 ?? address)
}

/** Whether the policy lets a connection go to this address. */
export const permits = (policy: Policy, address: string): boolean =>
  isPublicAddress(address) || (policy.allowLoopbackForTests && isLoopbackAddress(address))

// ---------------------------------------------------------------------------------------------
// Host names and URLs
// ---------------------------------------------------------------------------------------------

/**
 * Names that never reach a public host: `localhost` and `*.localhost` (RFC 6761), `*.local`
 * (mDNS), `*.internal` (reserved for private use; `metadata.google.internal`), `*.home.arpa`,
 * `*.localdomain`, and single-label names (`metadata`, `intranet`), which only search domains complete.
 */
const LOCAL_NAME = /(^|\.)(localhost|local|internal|home\.arpa|localdomain)$/

/** A URL's `hostname` without the brackets of an IPv6 literal or a trailing dot. */
export const bareHost = (hostname: string): string =>
  hostname
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "")
    .toLowerCase()

const isLoopbackName = (host: string): boolean => host === "localhost" || host.endsWith(".localhost")

/** A host as the WHATWG URL parser writes it: IPv4 in any notation (`2130706433`, `0x7f.1`) as dotted decimal. */
const normalised = (hostname: string): string => {
  const host = bareHost(hostname)
  if (isIP(host) !== 0 || !URL.canParse(`https://${host}/`)) return host
  return bareHost(new URL(`https://${host}/`).hostname)
}

/** What is wrong with a host (a URL's `hostname`, or a bare name or address), or undefined. */
export const hostProblem = (hostname: string, policy: Pick<Policy, "allowLoopbackForTests"> = publicOnly): string | undefined => {
  const host = normalised(hostname)
  if (host === "") return "has no host"
  if (isIP(host) !== 0) {
    return permits({ ...publicOnly, ...policy }, host)
      ? undefined
      : "names a loopback, private, link-local, metadata or otherwise non-public address"
  }
  if (policy.allowLoopbackForTests && isLoopbackName(host)) return undefined
  if (LOCAL_NAME.test(host) || !host.includes("."))
    return "names a local host (localhost, .local, .internal or a name without a dot)"
  return undefined
}

/** Whether the policy lets plain http go to this URL (test servers on loopback only). */
const httpAllowed = (url: URL, policy: Pick<Policy, "allowLoopbackForTests">): boolean => {
  const host = bareHost(url.hostname)
  return policy.allowLoopbackForTests && (isLoopbackName(host) || isLoopbackAddress(host))
}

/** What is wrong with a URL under the policy, syntactically (no DNS), or undefined. */
export const urlProblem = (url: string | URL, policy: Pick<Policy, "allowLoopbackForTests"> = publicOnly): string | undefined => {
  let parsed: URL
  try {
    parsed = typeof url === "string" ? new URL(url) : url
  } catch {
    return "is not a URL"
  }
  if (parsed.protocol !== "https:" && !(parsed.protocol === "http:" && httpAllowed(parsed, policy))) return "is not an https URL"
  if (parsed.username !== "" || parsed.password !== "") return "carries credentials (user:password@)"
  return hostProblem(parsed.hostname, policy)
}

// ---------------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------------

/** The policy refused a URL or an address; trying again will not help. */
export class AddressRefused extends Error {
  readonly code = "ERR_ADDRESS_REFUSED"
  override readonly name = "AddressRefused"
}

/**
 * The addresses of `hostname` (an IP literal is its own), when the policy permits every one of
 * them: one non-public answer refuses the lot. Rejects with `AddressRefused` for a refusal and
 * with the resolver's error when the name does not resolve.
 */
export const resolveChecked = async (hostname: string, policy: Policy): Promise<ReadonlyArray<LookupAddress>> => {
  const host = bareHost(hostname)
  const family = isIP(host)
  const addresses = family !== 0 ? [{ address: host, family }] : await policy.resolve(host)
  if (addresses.length === 0) throw new AddressRefused(`${host} has no address`)
  const refused = addresses.find(({ address }) => !permits(policy, address))
  if (refused !== undefined) throw new AddressRefused(`${host} resolves to a non-public address (${refused.address})`)
  return addresses
}
