/**
 * The client a request is counted against by per-client limits (console sign-in failures, MCP
 * client registration and authorization): an IPv4 address (IPv4-mapped IPv6 unwrapped), an IPv6
 * /64, or `unknown`. The address is the socket's peer, or the client a trusted proxy names
 * (TRUSTED_PROXIES); an IPv6 host holds a whole /64, so its addresses count as one client.
 */
import { Option, Result } from "effect"
import { IpNetwork, NetAddress } from "effect/net"

export const sourceOf = (remoteAddress: string | undefined): string => {
  const parsed = remoteAddress === undefined ? undefined : NetAddress.ipFromString(remoteAddress)
  if (parsed === undefined || Result.isFailure(parsed)) return "unknown"
  const address = parsed.success
  if (NetAddress.isIpv4Address(address)) return NetAddress.formatIp(address)
  const mapped = NetAddress.fromIpv4Mapped(address)
  if (Option.isSome(mapped)) return NetAddress.formatIp(mapped.value)
  return IpNetwork.format(Result.getOrThrow(IpNetwork.fromAddress(address, 64)))
}
