/**
 * The address policy: which IP addresses, host names and URLs a fetch on someone else's behalf
 * may reach, and the resolution step with an injected resolver (real DNS cannot be steered).
 */
import type { LookupAddress } from "node:dns"
import { describe, expect, it } from "@effect/vitest"
import * as AddressPolicy from "../../src/outbound/AddressPolicy.ts"

const v4 = (address: string): LookupAddress => ({ address, family: 4 })
const v6 = (address: string): LookupAddress => ({ address, family: 6 })

const ZONE: Record<string, ReadonlyArray<LookupAddress>> = {
  "public.example.com": [v4("93.184.215.14"), v6("2606:2800:21f:cb07:6820:80da:af6b:8b2c")],
  "dns64.example.com": [v6("64:ff9b::5db8:d70e")],
  "loopback.example.com": [v4("127.0.0.1")],
  "private.example.com": [v4("10.0.0.1")],
  "metadata.example.com": [v4("169.254.169.254")],
  "ec2-v6-metadata.example.com": [v6("fd00:ec2::254")],
  "mapped.example.com": [v6("::ffff:192.168.0.1")],
  "cgnat.example.com": [v4("100.64.0.1")],
  "mixed.example.com": [v4("93.184.215.14"), v4("192.168.1.1")],
  "mixed-v6.example.com": [v4("93.184.215.14"), v6("::1")],
  "empty.example.com": []
}

const asked: Array<string> = []
const policy: AddressPolicy.Policy = {
  allowLoopbackForTests: false,
  resolve: async (hostname) => {
    asked.push(hostname)
    const addresses = ZONE[hostname]
    if (addresses === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" })
    return addresses
  }
}

describe("IP addresses", () => {
  it("are public when global unicast, IPv6 forms of IPv4 judged by the IPv4 address", () => {
    for (const address of [
      "93.184.215.14",
      "8.8.8.8",
      "2606:4700::1111",
      "::ffff:8.8.8.8",
      "64:ff9b::808:808",
      "2002:808:808::1"
    ]) {
      expect(AddressPolicy.isPublicAddress(address), address).toBe(true)
    }
    for (const address of [
      "0.0.0.0",
      "10.0.0.1",
      "100.64.0.1",
      "100.127.255.254",
      "127.0.0.1",
      "127.255.255.254",
      "169.254.169.254",
      "172.16.0.1",
      "172.31.255.255",
      "192.0.0.170",
      "192.0.2.1",
      "192.168.0.1",
      "198.18.0.1",
      "198.51.100.1",
      "203.0.113.1",
      "224.0.0.1",
      "239.255.255.250",
      "240.0.0.1",
      "255.255.255.255",
      "::",
      "::1",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "::ffff:10.0.0.1",
      "::ffff:192.168.0.1",
      "::ffff:169.254.169.254",
      "::127.0.0.1",
      "64:ff9b::7f00:1",
      "2002:c0a8:1::1",
      "fc00::1",
      "fd00:ec2::254",
      "fe80::1",
      "fe80::1%eth0",
      "fec0::1",
      "ff02::1",
      "2001:db8::1",
      "2001::1",
      "100::1",
      "not an address",
      "localhost",
      "[::1]"
    ]) {
      expect(AddressPolicy.isPublicAddress(address), address).toBe(false)
    }
  })

  it("are loopback in 127/8, ::1 and IPv4 loopback carried in IPv6", () => {
    for (const address of ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"]) {
      expect(AddressPolicy.isLoopbackAddress(address), address).toBe(true)
    }
    for (const address of ["10.0.0.1", "93.184.215.14", "localhost", "::"]) {
      expect(AddressPolicy.isLoopbackAddress(address), address).toBe(false)
    }
  })
})

describe("URLs", () => {
  it("admits https URLs of public hosts and public addresses", () => {
    for (const url of [
      "https://cdn.example.com/a.png",
      "https://cdn.example.com:8443/a.png?sig=abc",
      "https://93.184.215.14/a.png",
      "https://[2606:4700::1111]/a.png",
      "https://localhost.example.com/a.png",
      "https://internal.example.com/a.png"
    ]) {
      expect(AddressPolicy.urlProblem(url), url).toBeUndefined()
    }
  })

  it.each([
    ["http://cdn.example.com/a.png", "not an https URL"],
    ["ftp://cdn.example.com/a.png", "not an https URL"],
    ["not a url", "not a URL"],
    ["https://user:pass@cdn.example.com/a.png", "credentials"],
    ["https://user@cdn.example.com/a.png", "credentials"],
    ["https://169.254.169.254/latest/meta-data/iam", "non-public address"],
    ["https://[fd00:ec2::254]/latest/meta-data", "non-public address"],
    ["https://127.0.0.1/a.png", "non-public address"],
    ["https://10.0.0.1/a.png", "non-public address"],
    ["https://172.16.5.4/a.png", "non-public address"],
    ["https://192.168.1.1/a.png", "non-public address"],
    ["https://100.64.0.1/a.png", "non-public address"],
    ["https://0.0.0.0/a.png", "non-public address"],
    ["https://[::1]/a.png", "non-public address"],
    ["https://[::ffff:127.0.0.1]/a.png", "non-public address"],
    ["https://[::ffff:a9fe:a9fe]/a.png", "non-public address"],
    ["https://[fe80::1]/a.png", "non-public address"],
    // Numeric forms the WHATWG parser normalises to dotted decimal.
    ["https://2130706433/a.png", "non-public address"],
    ["https://0x7f.1/a.png", "non-public address"],
    ["https://0177.0.0.1/a.png", "non-public address"],
    ["https://127.1/a.png", "non-public address"],
    ["https://0xa9fea9fe/a.png", "non-public address"],
    ["https://localhost/a.png", "local host"],
    ["https://LOCALHOST./a.png", "local host"],
    ["https://app.localhost/a.png", "local host"],
    ["https://printer.local/a.png", "local host"],
    ["https://metadata.google.internal/computeMetadata/v1/", "local host"],
    ["https://router.home.arpa/a.png", "local host"],
    ["https://metadata/a.png", "local host"]
  ])("refuses %s (%s)", (url, reason) => {
    expect(AddressPolicy.urlProblem(url)).toContain(reason)
  })

  it("judges a bare host as the URL parser would write it", () => {
    for (const host of ["0x7f.1", "2130706433", "0177.0.0.1", "127.1", "[::1]", "::ffff:a00:1", "localhost.", "metadata"]) {
      expect(AddressPolicy.hostProblem(host), host).toBeDefined()
    }
    for (const host of ["cdn.example.com", "93.184.215.14", "2606:4700::1111", "[2606:4700::1111]"]) {
      expect(AddressPolicy.hostProblem(host), host).toBeUndefined()
    }
  })

  it("admits http to loopback hosts only under the tests' policy", () => {
    const tests = { allowLoopbackForTests: true }
    expect(AddressPolicy.urlProblem("http://127.0.0.1:4000/a.png")).toBeDefined()
    expect(AddressPolicy.urlProblem("http://127.0.0.1:4000/a.png", tests)).toBeUndefined()
    expect(AddressPolicy.urlProblem("http://localhost:4000/a.png", tests)).toBeUndefined()
    expect(AddressPolicy.urlProblem("http://cdn.example.com/a.png", tests)).toContain("not an https URL")
    expect(AddressPolicy.urlProblem("https://10.0.0.1/a.png", tests)).toContain("non-public address")
  })
})

describe("resolving a host", () => {
  it.each(["public.example.com", "dns64.example.com"])("returns the addresses of %s, all public", async (host) => {
    asked.length = 0
    expect(await AddressPolicy.resolveChecked(host, policy)).toEqual(ZONE[host])
    expect(asked).toEqual([host])
  })

  it.each([
    "loopback.example.com",
    "private.example.com",
    "metadata.example.com",
    "ec2-v6-metadata.example.com",
    "mapped.example.com",
    "cgnat.example.com",
    "mixed.example.com",
    "mixed-v6.example.com",
    "empty.example.com"
  ])("refuses %s: one non-public answer refuses the lot", async (host) => {
    await expect(AddressPolicy.resolveChecked(host, policy)).rejects.toBeInstanceOf(AddressPolicy.AddressRefused)
  })

  it("judges an IP literal without resolving it, and passes a resolution failure on", async () => {
    asked.length = 0
    expect(await AddressPolicy.resolveChecked("[2606:4700::1111]", policy)).toEqual([v6("2606:4700::1111")])
    await expect(AddressPolicy.resolveChecked("127.0.0.1", policy)).rejects.toBeInstanceOf(AddressPolicy.AddressRefused)
    expect(asked).toEqual([])
    const missing = await AddressPolicy.resolveChecked("missing.example.com", policy).catch((error: unknown) => error)
    expect(missing).toMatchObject({ code: "ENOTFOUND" })
  })

  it("permits loopback answers only under the tests' policy", async () => {
    await expect(
      AddressPolicy.resolveChecked("loopback.example.com", { ...policy, allowLoopbackForTests: true })
    ).resolves.toEqual([v4("127.0.0.1")])
    await expect(
      AddressPolicy.resolveChecked("private.example.com", { ...policy, allowLoopbackForTests: true })
    ).rejects.toBeInstanceOf(AddressPolicy.AddressRefused)
  })

  it("uses the system resolver and public-only answers by default", () => {
    expect(AddressPolicy.publicOnly).toEqual({ resolve: AddressPolicy.systemResolve, allowLoopbackForTests: false })
    expect(AddressPolicy.AddressPolicy.defaultValue()).toBe(AddressPolicy.publicOnly)
  })
})
