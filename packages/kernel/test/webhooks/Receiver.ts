/**
 * A local webhook receiver for tests: records every request (headers and body) and answers with
 * the next status of a script (then the last one again), on 127.0.0.1 at an ephemeral port.
 */
import { createServer } from "node:http"
import type { Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"

export interface Received {
  readonly headers: Record<string, string>
  readonly body: string
}

export interface Receiver {
  url: string
  readonly received: Array<Received>
  /** Statuses to answer, in order; the last repeats. 0 answers nothing (the request hangs until the receiver closes). */
  statuses: Array<number>
}

export const make = (statuses: Array<number> = [204]) =>
  Effect.map(
    Effect.acquireRelease(
      Effect.callback<{ readonly receiver: Receiver; readonly server: Server }>((resume) => {
        const receiver: Receiver = { received: [], statuses, url: "" }
        const server = createServer((request, response) => {
          const chunks: Array<Buffer> = []
          request.on("data", (chunk: Buffer) => chunks.push(chunk))
          request.on("end", () => {
            const headers: Record<string, string> = {}
            for (const [name, value] of Object.entries(request.headers)) if (typeof value === "string") headers[name] = value
            receiver.received.push({ headers, body: Buffer.concat(chunks).toString("utf8") })
            const status = receiver.statuses.length > 1 ? receiver.statuses.shift()! : receiver.statuses[0]!
            if (status === 0) return
            response.writeHead(status, status >= 300 && status < 400 ? { location: "https://example.com/" } : {})
            response.end(`answer ${status}`)
          })
        })
        server.listen(0, "127.0.0.1", () => {
          receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
          resume(Effect.succeed({ receiver, server }))
        })
      }),
      ({ server }) =>
        Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    ),
    ({ receiver }) => receiver
  )
