/**
 * Reading a whole response body with a size cap, for the JSON replies of the task adapters
 * (`HttpClient`, a fetch `Response`) and of chat upstreams (`OpenAiCompatible`, a node:http
 * response): past the cap the rest of the body is cancelled instead of buffered.
 */
import type { Readable } from "node:stream"

/** The body grew past the cap. */
export class BodyTooLarge extends RangeError {}

/** The body as UTF-8 text; rejects with `BodyTooLarge` past `maxBytes`. */
export const readText = async (response: Response, maxBytes: number): Promise<string> => {
  if (response.body === null) return ""
  const chunks: Array<Uint8Array> = []
  let size = 0
  for await (const chunk of response.body) {
    size += chunk.byteLength
    if (size > maxBytes) {
      await response.body.cancel().catch(() => undefined)
      throw new BodyTooLarge(`the body is larger than ${maxBytes} bytes`)
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString("utf8")
}

/** `readText` for a Node stream (a node:http response); past the cap it is destroyed. */
export const readStreamText = async (body: Readable, maxBytes: number): Promise<string> => {
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.byteLength
    // Leaving the loop by a throw destroys the stream.
    if (size > maxBytes) throw new BodyTooLarge(`the body is larger than ${maxBytes} bytes`)
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString("utf8")
}
