/**
 * Preloaded into the server and the floor proxy by `run.ts --segments` (Node's `--import`): where a
 * chat completion's time goes inside the process, from Node's own HTTP diagnostics channels, with no
 * change to the code measured. For each request to `.../chat/completions` served while no other was
 * in flight (so at concurrency 1) and answered with JSON (a stream's answer ends with its last token),
 * it appends to SEGMENTS_LOG one line of three durations in ms: from the request's arrival to the
 * upstream request's send (`http.client.request.start`, published once its bytes are handed to the
 * socket), from there to the upstream's response head, and from that to the answer's last byte
 * handed to the client's socket (`http.server.response.finish`).
 */
import diagnostics from "node:diagnostics_channel"
import { createWriteStream } from "node:fs"
import type { ClientRequest, IncomingMessage, ServerResponse } from "node:http"

const log = process.env.SEGMENTS_LOG === undefined ? undefined : createWriteStream(process.env.SEGMENTS_LOG, { flags: "a" })
const isChat = (path: string | undefined) => path?.endsWith("/chat/completions") === true

let inFlight = 0
/** The one request in flight, or undefined when another overlapped it. */
let current: { arrived: number; sent?: number; answered?: number } | undefined

if (log !== undefined) {
  diagnostics.subscribe("http.server.request.start", (message) => {
    if (!isChat((message as { request: IncomingMessage }).request.url)) return
    inFlight += 1
    current = inFlight === 1 ? { arrived: performance.now() } : undefined
  })
  diagnostics.subscribe("http.client.request.start", (message) => {
    if (current !== undefined && isChat((message as { request: ClientRequest }).request.path)) current.sent = performance.now()
  })
  diagnostics.subscribe("http.client.response.finish", (message) => {
    if (current !== undefined && isChat((message as { request: ClientRequest }).request.path))
      current.answered = performance.now()
  })
  diagnostics.subscribe("http.server.response.finish", (message) => {
    const { request: incoming, response } = message as { request: IncomingMessage; response: ServerResponse }
    if (!isChat(incoming.url)) return
    inFlight -= 1
    const request = current
    current = undefined
    if (request?.sent === undefined || request.answered === undefined) return
    if (String(response.getHeader("content-type")).startsWith("text/event-stream")) return
    const before = request.sent - request.arrived
    const upstream = request.answered - request.sent
    const after = performance.now() - request.answered
    log.write(`${before.toFixed(4)} ${upstream.toFixed(4)} ${after.toFixed(4)}\n`)
  })
}
