/**
 * Reading a whole response body with a size cap, for the JSON replies of the task adapters
 * (`HttpClient`, a fetch `Response`): past the cap the rest of the body is cancelled instead of
 * buffered. `BodyTooLarge` is also what the chat adapter's node:http reads fail with (BodyPull).
 */

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
