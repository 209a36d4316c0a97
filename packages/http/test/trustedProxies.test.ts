/**
 * TRUSTED_PROXIES: behind a reverse proxy every request comes from the proxy's address, so
 * per-client limits (MCP client registration) would count all clients as one. The server
 * believes `X-Forwarded-For` only from the networks listed, and never otherwise.
 */
import { createServer } from "node:http"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { IpNetwork } from "effect/net"
import { NodeHttpServer } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import * as Main from "../src/main.ts"
import * as Server from "../src/Server.ts"

const whoami = HttpRouter.use((router) =>
  router.add("GET", "/whoami", (request) =>
    Effect.succeed(HttpServerResponse.text(Option.getOrElse(request.remoteAddress, () => "unknown")))
  )
)

/** The remote address a route sees for a request from 127.0.0.1 that claims another client. */
const seenAddress = (trustedProxies: ReadonlyArray<IpNetwork.IpNetwork>, forwardedFor: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Layer.build(
        Server.serveOn(whoami, { disableLogger: true, disableListenLog: true, trustedProxies }).pipe(
          Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
        )
      )
      const { address } = yield* HttpServer.HttpServer.pipe(Effect.provide(context))
      return yield* Effect.promise(() =>
        fetch(`${Main.localUrl(address)}/whoami`, { headers: { "x-forwarded-for": forwardedFor } }).then((r) => r.text())
      )
    })
  )

const read = (env: Record<string, string>) =>
  Main.config.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })))

describe("TRUSTED_PROXIES", () => {
  it.live("a listed proxy's X-Forwarded-For names the client", () =>
    Effect.gen(function* () {
      expect(yield* seenAddress([IpNetwork.fromStringUnsafe("127.0.0.0/8")], "203.0.113.9")).toBe("203.0.113.9")
      // The proxy appends the address it saw; an entry the client wrote itself further left is ignored.
      expect(yield* seenAddress([IpNetwork.fromStringUnsafe("127.0.0.1/32")], "6.6.6.6, 198.51.100.7")).toBe("198.51.100.7")
    })
  )

  it.live("without it, or from another network, the socket's peer counts", () =>
    Effect.gen(function* () {
      expect(yield* seenAddress([], "203.0.113.9")).toBe("127.0.0.1")
      expect(yield* seenAddress([IpNetwork.fromStringUnsafe("10.0.0.0/8")], "203.0.113.9")).toBe("127.0.0.1")
    })
  )

  it.effect("is read as comma-separated networks or addresses, none when unset", () =>
    Effect.gen(function* () {
      expect((yield* read({})).trustedProxies).toEqual([])
      const networks = (yield* read({ TRUSTED_PROXIES: "10.0.0.0/8, 192.168.1.7 ,::1" })).trustedProxies
      expect(networks.map(String)).toEqual(
        ["10.0.0.0/8", "192.168.1.7/32", "::1/128"].map((text) => String(IpNetwork.fromStringUnsafe(text)))
      )
      const refused = yield* Effect.flip(read({ TRUSTED_PROXIES: "10.0.0.0/8, proxy.internal" }))
      expect(refused._tag).toBe("ConfigError")
      expect(refused.message).toContain('"proxy.internal" is not an IP address or network')
    })
  )
})
