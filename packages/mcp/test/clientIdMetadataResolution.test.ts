/**
 * A metadata document is fetched only from a host whose every address is public. The host
 * names resolve through an injected resolver (real DNS cannot be steered from a test), and the
 * documents are served by msw at the HTTP layer: every host below serves a valid document, so
 * a refusal can only come from the address check. (Which addresses are public is the kernel's
 * `AddressPolicy`, tested there.)
 */
import type { LookupAddress } from "node:dns"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Logger, Result } from "effect"
import { http, HttpResponse } from "msw"
import { setupServer } from "msw/node"
import { ClientIdMetadata } from "../src/index.ts"

const v4 = (address: string): LookupAddress => ({ address, family: 4 })
const v6 = (address: string): LookupAddress => ({ address, family: 6 })

const ZONE: Record<string, ReadonlyArray<LookupAddress>> = {
  "public.example.com": [v4("93.184.215.14"), v6("2606:2800:21f:cb07:6820:80da:af6b:8b2c")],
  "dns64.example.com": [v6("64:ff9b::5db8:d70e")],
  "loopback.example.com": [v4("127.0.0.1")],
  "private.example.com": [v4("10.20.30.40")],
  "v6-loopback.example.com": [v6("::1")],
  "mapped.example.com": [v6("::ffff:192.168.0.1")],
  "link-local.example.com": [v4("169.254.169.254")],
  "unique-local.example.com": [v6("fd12:3456::1")],
  "unspecified.example.com": [v4("0.0.0.0")],
  "multicast.example.com": [v6("ff02::1")],
  "nat64-private.example.com": [v6("64:ff9b::a00:1")],
  "one-private.example.com": [v4("93.184.215.14"), v4("192.168.1.1")]
}

const resolved: Array<string> = []
const resolve: ClientIdMetadata.Resolve = async (hostname) => {
  resolved.push(hostname)
  const addresses = ZONE[hostname]
  if (addresses === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" })
  return addresses
}

const documentAt = (url: string) =>
  http.get(url, () => HttpResponse.json({ client_id: url, client_name: "Doc", redirect_uris: ["https://app.example.com/cb"] }))

const server = setupServer(...Object.keys(ZONE).map((host) => documentAt(`https://${host}/client.json`)))
beforeAll(() => server.listen({ onUnhandledFrame: "error" }))
afterEach(() => {
  server.resetHandlers()
  resolved.length = 0
  logged.length = 0
})
afterAll(() => server.close())

/** What the fetches logged: the reasons the caller is not told. */
const logged: Array<string> = []
const logs = Logger.layer([Logger.make((options) => void logged.push((options.message as Array<unknown>).join(" ")))])

const fetchDoc = (url: string, options: Partial<ClientIdMetadata.Options> = {}) =>
  Effect.runPromise(
    Effect.result(ClientIdMetadata.fetchClient(url, { ...ClientIdMetadata.defaults, resolve, ...options })).pipe(
      Effect.provide(logs)
    )
  )

describe("resolving the host of a metadata document", () => {
  it.each(["public.example.com", "dns64.example.com"])("fetches from %s, whose addresses are public", async (host) => {
    const result = await fetchDoc(`https://${host}/client.json`)
    expect(Result.isSuccess(result) && result.success).toMatchObject({
      clientName: "Doc",
      redirectUris: ["https://app.example.com/cb"]
    })
    expect(resolved).toEqual([host])
  })

  it.each([
    "loopback.example.com",
    "private.example.com",
    "v6-loopback.example.com",
    "mapped.example.com",
    "link-local.example.com",
    "unique-local.example.com",
    "unspecified.example.com",
    "multicast.example.com",
    "nat64-private.example.com",
    "one-private.example.com"
  ])("refuses %s, which resolves to a non-public address", async (host) => {
    const result = await fetchDoc(`https://${host}/client.json`)
    expect(Result.isFailure(result) && result.failure).toMatchObject({
      error: "invalid_client",
      description: `The client's metadata document at https://${host}/client.json could not be fetched.`
    })
    expect(logged).toEqual([expect.stringContaining(`${host} resolves to a non-public address`)])
  })

  it("refuses an https name resolving to loopback even under allowHttpLoopback, which admits only http loopback hosts", async () => {
    const result = await fetchDoc("https://loopback.example.com/client.json", { allowHttpLoopback: true })
    expect(Result.isFailure(result) && result.failure.description).toContain("could not be fetched")
  })

  it("refuses a host that does not resolve, and counts resolution in the timeout", async () => {
    const missing = await fetchDoc("https://missing.example.com/client.json")
    expect(Result.isFailure(missing) && missing.failure.description).toBe(
      "The client's metadata document at https://missing.example.com/client.json could not be fetched."
    )
    expect(logged).toEqual([expect.stringContaining("did not resolve")])
    const started = Date.now()
    const hanging = await fetchDoc("https://public.example.com/client.json", {
      timeoutMs: 200,
      resolve: () => new Promise(() => {})
    })
    expect(Result.isFailure(hanging) && hanging.failure.description).toContain("could not be fetched")
    expect(Date.now() - started).toBeLessThan(2_000)
  })
})
