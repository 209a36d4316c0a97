/**
 * Which IP addresses a fetch on a stranger's behalf may connect to: public unicast ones.
 *
 * IPv4: refused are this network (0/8), private use (10/8, 172.16/12, 192.168/16), shared
 * address space (100.64/10), loopback (127/8), link-local (169.254/16), IETF protocol
 * assignments (192.0.0/24), documentation, the 6to4 relay anycast, benchmarking (198.18/15),
 * multicast (224/4), and reserved space with the broadcast address (240/4).
 *
 * IPv6: only global unicast (2000::/3) is allowed, which leaves out the unspecified and
 * loopback addresses, IPv4-compatible ones, unique-local (fc00::/7), link-local (fe80::/10),
 * site-local and multicast (ff00::/8); within it, IETF protocol assignments (2001::/23, Teredo
 * among them) and documentation are refused too. An IPv6 address that carries an IPv4 one
 * (IPv4-mapped ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16) is judged by that IPv4
 * address, so that `::ffff:10.0.0.1` is private and a DNS64 answer for a public host is not.
 *
 * Text that is not a plain IP address (a scoped `fe80::1%eth0` included) is not public.
 */
import { Result } from "effect"
import { IpNetwork, NetAddress } from "effect/net"

const networks = (cidrs: ReadonlyArray<string>) => cidrs.map(IpNetwork.fromStringUnsafe)

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

const GLOBAL_UNICAST = IpNetwork.fromStringUnsafe("2000::/3")
const NOT_PUBLIC_V6 = networks(["2001::/23", "2001:db8::/32", "3fff::/20"])
const NAT64 = IpNetwork.fromStringUnsafe("64:ff9b::/96")
const SIX_TO_FOUR = IpNetwork.fromStringUnsafe("2002::/16")

/** The IPv4 address an IPv6 address carries, in the forms a connection would reach it by. */
const carriedIpv4 = (address: NetAddress.Ipv6Address): NetAddress.Ipv4Address | undefined => {
  const octets = Uint8Array.from(NetAddress.ipv6ToOctets(address))
  if (NetAddress.isIpv4Mapped(address) || IpNetwork.contains(NAT64, address)) return NetAddress.ipv4FromBytesUnsafe(octets.subarray(12))
  if (IpNetwork.contains(SIX_TO_FOUR, address)) return NetAddress.ipv4FromBytesUnsafe(octets.subarray(2, 6))
  return undefined
}

const isPublicIp = (address: NetAddress.IpAddress): boolean => {
  if (NetAddress.isIpv4Address(address)) return !NOT_PUBLIC_V4.some((network) => IpNetwork.contains(network, address))
  const carried = carriedIpv4(address)
  if (carried !== undefined) return isPublicIp(carried)
  return IpNetwork.contains(GLOBAL_UNICAST, address) && !NOT_PUBLIC_V6.some((network) => IpNetwork.contains(network, address))
}

/** Whether `text` is an IP address a server-side fetch may connect to. */
export const isPublicAddress = (text: string): boolean => {
  const parsed = NetAddress.ipFromString(text)
  return Result.isSuccess(parsed) && isPublicIp(parsed.success)
}

/** Whether `text` is a loopback address (127/8, ::1, or 127/8 mapped into IPv6). */
export const isLoopbackAddress = (text: string): boolean => {
  const parsed = NetAddress.ipFromString(text)
  if (Result.isFailure(parsed)) return false
  const address = parsed.success
  const v4 = NetAddress.isIpv6Address(address) && NetAddress.isIpv4Mapped(address) ? carriedIpv4(address) : undefined
  return NetAddress.isLoopback(v4 ?? address)
}
