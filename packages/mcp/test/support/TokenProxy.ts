/**
 * A small local HTTP proxy that adds `Authorization: Bearer <token>` to every request and
 * forwards it, Host and Origin unchanged, to an upstream server: for test tools that speak MCP
 * but cannot sign in (the conformance suite). It listens before it knows its upstream, so that
 * the upstream can be told the proxy's origin.
 */
import { createServer, request } from "node:http"
import type { AddressInfo } from "node:net"

export interface TokenProxy {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  /** Where to forward from now on, and with which token. */
  readonly forwardTo: (upstream: string, token: string) => void
  readonly close: () => Promise<void>
}

export const start = (): Promise<TokenProxy> => {
  let target: { readonly url: URL; readonly token: string } | undefined
  const server = createServer((incoming, outgoing) => {
    if (target === undefined) {
      outgoing.writeHead(502).end()
      return
    }
    const forwarded = request(
      {
        hostname: target.url.hostname,
        port: target.url.port,
        method: incoming.method,
        path: incoming.url,
        headers: { ...incoming.headers, authorization: `Bearer ${target.token}` }
      },
      (response) => {
        outgoing.writeHead(response.statusCode ?? 502, response.headers)
        response.pipe(outgoing)
      }
    )
    forwarded.on("error", () => {
      if (!outgoing.headersSent) outgoing.writeHead(502)
      outgoing.end()
    })
    incoming.pipe(forwarded)
  })
  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}`,
        forwardTo: (upstream, token) => void (target = { url: new URL(upstream), token }),
        close: () =>
          new Promise((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      })
    })
  })
}
