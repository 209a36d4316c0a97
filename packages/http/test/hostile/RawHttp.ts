/**
 * HTTP/1.1 over a plain TCP socket, for requests fetch and node:http refuse to send: a path sent
 * byte for byte (`/../`, `%2e%2e`, `//`, no normalisation), header values with any byte,
 * duplicated headers, a Content-Length of our choosing. One request per connection
 * (`Connection: close`); the answer is read to the end, a chunked body decoded, an event
 * stream up to its first event. HOSTILE_TIMEOUT_MS overrides the default wait of 20 s.
 */
import { connect } from "node:net"

export type HeaderList = ReadonlyArray<readonly [string, string]>

export interface RawRequest {
  readonly method: string
  /** Sent as is on the request line. */
  readonly path: string
  readonly headers?: HeaderList
  readonly body?: string | Uint8Array
  /** Leave out the Content-Length header this client adds otherwise (with a body). */
  readonly noContentLength?: boolean
}

export interface RawReply {
  /** 0 when the server closed or reset the connection without an answer. */
  readonly status: number
  /** Lower-cased names; a repeated header's values joined with ", ". */
  readonly headers: Readonly<Record<string, string>>
  readonly text: string
  /** The body parsed as JSON, or the last `data:` event of an event stream; undefined otherwise. */
  readonly json: any
  /** Why the connection ended early, if it did. */
  readonly transportError?: string
}

/** Each code unit of a string up to U+00FF as one byte, anything above as UTF-8 (so "\u0000" is a 0 byte). */
const bytesOf = (text: string): Buffer =>
  /^[\u0000-\u00ff]*$/.test(text) ? Buffer.from(text, "latin1") : Buffer.from(text, "utf8")

const decodeChunked = (body: Buffer): Buffer => {
  const parts: Array<Buffer> = []
  let at = 0
  for (;;) {
    const lineEnd = body.indexOf("\r\n", at)
    if (lineEnd < 0) break
    const size = parseInt(body.subarray(at, lineEnd).toString("latin1").split(";")[0]!, 16)
    if (!Number.isFinite(size) || size === 0) break
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size))
    at = lineEnd + 2 + size + 2
  }
  return Buffer.concat(parts)
}

const jsonOf = (text: string, contentType: string | undefined): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    if (contentType?.includes("text/event-stream")) {
      const data = text
        .split("\n")
        .filter((line) => line.startsWith("data: "))
        .map((line) => line.slice(6))
      try {
        return data.length > 0 ? JSON.parse(data[data.length - 1]!) : undefined
      } catch {
        return undefined
      }
    }
    return undefined
  }
}

const parse = (raw: Buffer, transportError: string | undefined): RawReply => {
  const headEnd = raw.indexOf("\r\n\r\n")
  if (headEnd < 0) {
    return {
      status: 0,
      headers: {},
      text: raw.toString("utf8"),
      json: undefined,
      transportError: transportError ?? "no complete answer"
    }
  }
  const [statusLine, ...lines] = raw.subarray(0, headEnd).toString("latin1").split("\r\n")
  const status = Number(statusLine!.split(" ")[1])
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(":")
    const name = line.slice(0, colon).trim().toLowerCase()
    const value = line.slice(colon + 1).trim()
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`
  }
  let body = raw.subarray(headEnd + 4)
  if (headers["transfer-encoding"]?.toLowerCase().includes("chunked")) body = decodeChunked(body)
  const text = body.toString("utf8")
  return {
    status,
    headers,
    text,
    json: jsonOf(text, headers["content-type"]),
    ...(transportError === undefined ? {} : { transportError })
  }
}

/** Sends one request to `baseUrl` (http://host:port) and reads the whole answer. */
export const send = (
  baseUrl: string,
  request: RawRequest,
  timeoutMs = Number(process.env.HOSTILE_TIMEOUT_MS ?? 20_000)
): Promise<RawReply> =>
  new Promise((resolve) => {
    const { hostname, port } = new URL(baseUrl)
    const body =
      request.body === undefined
        ? undefined
        : typeof request.body === "string"
          ? Buffer.from(request.body, "utf8")
          : Buffer.from(request.body)
    const supplied = new Set((request.headers ?? []).map(([name]) => name.toLowerCase()))
    const head: Array<Buffer> = [
      Buffer.from(`${request.method} `, "latin1"),
      bytesOf(request.path),
      Buffer.from(" HTTP/1.1\r\n", "latin1")
    ]
    const header = (name: string, value: string) =>
      head.push(bytesOf(name), Buffer.from(": "), bytesOf(value), Buffer.from("\r\n"))
    if (!supplied.has("host")) header("host", `${hostname}:${port}`)
    for (const [name, value] of request.headers ?? []) header(name, value)
    if (body !== undefined && !request.noContentLength && !supplied.has("content-length"))
      header("content-length", String(body.byteLength))
    header("connection", "close")
    head.push(Buffer.from("\r\n"))
    const chunks: Array<Buffer> = []
    let settled = false
    const socket = connect({ host: hostname.replace(/^\[|\]$/g, ""), port: Number(port) })
    const finish = (error?: string) => {
      if (settled) return
      settled = true
      socket.destroy()
      resolve(parse(Buffer.concat(chunks), error))
    }
    socket.setTimeout(timeoutMs, () => finish(`no answer within ${timeoutMs} ms`))
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk)
      // An event stream (MCP) stays open after its answer: done at the first complete event.
      const sofar = parse(Buffer.concat(chunks), undefined)
      if (sofar.headers["content-type"]?.includes("text/event-stream") && /^data: .*\n\n/m.test(sofar.text)) finish()
    })
    socket.on("end", () => finish())
    socket.on("close", () => finish())
    socket.on("error", (error) => finish(error.message))
    socket.on("connect", () => {
      socket.write(Buffer.concat(head))
      if (body !== undefined) socket.write(body, () => undefined)
    })
  })
