/**
 * The benchmark's floor, in a process of its own: a bare node:http proxy to the upstream at
 * UPSTREAM_URL (no authentication, tokenizing or billing) on a keep-alive Agent of the same size
 * as the chat upstream's pool. It forwards POST /chat/completions and sends the answer back: a JSON
 * body read whole and written with its Content-Length, an event stream piped as it comes. What it
 * adds is what any Node proxy adds on this machine. Prints its base URL on stdout.
 */
import { once } from "node:events"
import { Agent, createServer, request } from "node:http"
import type { AddressInfo } from "node:net"

const upstream = new URL(`${process.env.UPSTREAM_URL!}/chat/completions`)
const agent = new Agent({ keepAlive: true, maxSockets: 128 })

const server = createServer((incoming, outgoing) => {
  const chunks: Array<Buffer> = []
  incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
  incoming.on("end", () => {
    const body = Buffer.concat(chunks)
    const forwarded = request(
      upstream,
      {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": body.length }
      },
      (answer) => {
        const contentType = answer.headers["content-type"] ?? "application/json"
        if (contentType.startsWith("text/event-stream")) {
          outgoing.writeHead(answer.statusCode ?? 502, { "content-type": contentType, "cache-control": "no-cache" })
          answer.pipe(outgoing)
          return
        }
        const parts: Array<Buffer> = []
        answer.on("data", (chunk: Buffer) => parts.push(chunk))
        answer.on("end", () => {
          const whole = Buffer.concat(parts)
          outgoing.writeHead(answer.statusCode ?? 502, { "content-type": contentType, "content-length": whole.length })
          outgoing.end(whole)
        })
      }
    )
    forwarded.on("error", (error) => outgoing.writeHead(502).end(String(error)))
    forwarded.end(body)
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, "127.0.0.1")
await once(server, "listening")
console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`)
