/**
 * POSTs to a chat upstream over node:http or node:https, on a keep-alive agent pooling at most
 * `connections` sockets per origin. `post` succeeds with the response once its head arrives, and
 * fails with `NoAnswer` when it has not within `answerTimeoutMs` (a timer, not a race of fibers);
 * interrupting it destroys the request, and a socket not connected within `connectTimeoutMs` fails
 * it. The caller reads the body, or destroys the response to give the request up. A closed pool
 * (its scope ended) destroys its sockets and fails every later post.
 */
// The modules' default exports, read at each call: interceptors (msw) patch `request` on them, and an
// import's named bindings would keep the original.
import http from "node:http"
import https from "node:https"
import { Effect } from "effect"

export interface Pool {
  readonly agent: http.Agent
  readonly module: typeof http | typeof https
  closed: boolean
}

export const pool = (url: URL, connections: number): Pool =>
  url.protocol === "https:"
    ? { agent: new https.Agent({ keepAlive: true, maxSockets: connections }), module: https, closed: false }
    : { agent: new http.Agent({ keepAlive: true, maxSockets: connections }), module: http, closed: false }

/** Destroys the pool's sockets; a node:http Agent would open new ones, so later posts are refused here. */
export const close = (pool: Pool): void => {
  pool.closed = true
  pool.agent.destroy()
}

/** The response's head did not arrive in time; the request was destroyed. */
export class NoAnswer extends Error {}

export const post = (
  pool: Pool,
  url: URL,
  headers: http.OutgoingHttpHeaders,
  body: string,
  timeouts: { readonly connectTimeoutMs: number; readonly answerTimeoutMs: number }
): Effect.Effect<http.IncomingMessage, Error> =>
  Effect.callback<http.IncomingMessage, Error>((resume) => {
    if (pool.closed) {
      resume(Effect.fail(new Error("the upstream client is closed")))
      return
    }
    const { connectTimeoutMs, answerTimeoutMs } = timeouts
    const answer = setTimeout(() => {
      const late = new NoAnswer(`the upstream did not answer within ${answerTimeoutMs} ms`)
      resume(Effect.fail(late))
      request.destroy(late)
    }, answerTimeoutMs)
    const request = pool.module.request(
      url,
      { method: "POST", headers: { ...headers, "content-length": Buffer.byteLength(body) }, agent: pool.agent },
      (response) => {
        clearTimeout(answer)
        resume(Effect.succeed(response))
      }
    )
    request.on("error", (cause) => {
      clearTimeout(answer)
      resume(Effect.fail(cause))
    })
    request.on("socket", (socket) => {
      if (!socket.connecting) return
      const timer = setTimeout(
        () => request.destroy(new Error(`no connection to the upstream within ${connectTimeoutMs} ms`)),
        connectTimeoutMs
      )
      socket.once("connect", () => clearTimeout(timer))
      socket.once("close", () => clearTimeout(timer))
    })
    request.end(body)
    return Effect.sync(() => {
      clearTimeout(answer)
      request.destroy()
    })
  })
