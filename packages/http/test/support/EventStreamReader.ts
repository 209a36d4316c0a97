/**
 * Reads GET /api/v1/jobs/{id}/events with fetch, as text: the status, the headers, and the
 * events and comment lines as they arrive, so tests can see what a client library hides
 * (heartbeats, the 204 after the final event, the end of the stream).
 */

export interface Frame {
  readonly id?: string
  readonly event?: string
  readonly data?: string
  /** The text of a comment line (`: heartbeat`). */
  readonly comment?: string
}

export interface Opened {
  readonly status: number
  readonly headers: Headers
  /** The next frame, or undefined once the stream has ended. */
  readonly next: () => Promise<Frame | undefined>
  /** Every frame until the stream ends. */
  readonly rest: () => Promise<Array<Frame>>
  readonly close: () => void
}

const parse = (block: string): Frame => {
  const frame: Record<string, string> = {}
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) frame.comment = line.slice(1).trim()
    else {
      const colon = line.indexOf(":")
      const name = line.slice(0, colon)
      const value = line.slice(colon + 1).replace(/^ /u, "")
      frame[name] = name === "data" && frame.data !== undefined ? `${frame.data}\n${value}` : value
    }
  }
  return frame
}

export const open = async (url: string, headers: Record<string, string>): Promise<Opened> => {
  const controller = new AbortController()
  const response = await fetch(url, { headers, signal: controller.signal })
  const reader = response.body?.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  let ended = reader === undefined
  const next = async (): Promise<Frame | undefined> => {
    for (;;) {
      const end = buffer.indexOf("\n\n")
      if (end >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        return parse(block)
      }
      if (ended || reader === undefined) return undefined
      const chunk = await reader.read()
      if (chunk.done) ended = true
      else buffer += decoder.decode(chunk.value, { stream: true })
    }
  }
  const rest = async () => {
    const frames: Array<Frame> = []
    for (let frame = await next(); frame !== undefined; frame = await next()) frames.push(frame)
    return frames
  }
  return { status: response.status, headers: response.headers, next, rest, close: () => controller.abort() }
}
