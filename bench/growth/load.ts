/**
 * The growth bench's load: `connections` keep-alive loops sending one kind of request back to
 * back for `seconds` after `warmup` seconds unrecorded; every answer must have the expected
 * status. Answers requests/s and latency percentiles of the requests inside the window.
 */
import { Agent, request } from "node:http"
import { summarize } from "../support/percentile.ts"
import type { Summary } from "../support/percentile.ts"

export interface Request {
  readonly method: "GET" | "POST"
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: Buffer | undefined
  readonly status: number
}

export interface Rate extends Summary {
  readonly perSecond: number
}

const send = (base: URL, agent: Agent, req: Request) =>
  new Promise<void>((resolve, reject) => {
    const headers = req.body === undefined ? req.headers : { ...req.headers, "content-length": String(req.body.length) }
    const sent = request(
      { hostname: base.hostname, port: base.port, path: req.path, method: req.method, agent, headers },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.once("end", () =>
          res.statusCode === req.status
            ? resolve()
            : reject(
                new Error(
                  `${req.method} ${req.path} answered ${res.statusCode}: ${Buffer.concat(chunks).toString().slice(0, 300)}`
                )
              )
        )
      }
    )
    sent.once("error", reject)
    sent.end(req.body)
  })

/** Drives `next()` (the request to send next) over `connections` sockets. */
export const drive = async (
  base: URL,
  options: { readonly connections: number; readonly seconds: number; readonly warmup: number },
  next: () => Request
): Promise<Rate> => {
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections, maxFreeSockets: options.connections })
  const samples: Array<number> = []
  const start = performance.now() + options.warmup * 1000
  const end = start + options.seconds * 1000
  const loop = async () => {
    for (;;) {
      const sent = performance.now()
      if (sent >= end) return
      await send(base, agent, next())
      const answered = performance.now()
      if (sent >= start && answered <= end) samples.push(answered - sent)
    }
  }
  try {
    await Promise.all(Array.from({ length: options.connections }, loop))
  } finally {
    agent.destroy()
  }
  return { perSecond: samples.length / options.seconds, ...summarize(samples) }
}
