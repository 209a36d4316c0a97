/**
 * HTTP Range requests (RFC 9110, section 14) for result downloads: one byte range per request.
 *
 * A header this server does not serve as a range (another unit, several ranges, a malformed or
 * reversed range) is ignored and the whole file is sent, as RFC 9110 allows; a well-formed range
 * that starts past the end of the file is unsatisfiable (416).
 */
import type { BlobStore } from "@taskmeter/kernel"

export type RangeRequest =
  | { readonly _tag: "Whole" }
  | { readonly _tag: "Partial"; readonly range: BlobStore.ByteRange }
  | { readonly _tag: "Unsatisfiable" }

const whole: RangeRequest = { _tag: "Whole" }
const unsatisfiable: RangeRequest = { _tag: "Unsatisfiable" }

const SPEC = /^bytes=(\d*)-(\d*)$/

/** What to send for a Range header value, for a file of `size` bytes. */
export const parse = (header: string | undefined, size: number): RangeRequest => {
  const match = header === undefined ? null : SPEC.exec(header.trim())
  if (match === null) return whole
  const [, first, last] = match as unknown as [string, string, string]
  if (first === "" && last === "") return whole
  if (first === "") {
    const suffix = Number(last)
    if (suffix === 0 || size === 0) return unsatisfiable
    return { _tag: "Partial", range: { start: Math.max(0, size - suffix), end: size - 1 } }
  }
  const start = Number(first)
  const lastByte = last === "" ? Number.MAX_SAFE_INTEGER : Number(last)
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(lastByte) || lastByte < start) return whole
  if (start >= size) return unsatisfiable
  return { _tag: "Partial", range: { start, end: Math.min(lastByte, size - 1) } }
}

/** The Content-Range of a served range. */
export const contentRange = (range: BlobStore.ByteRange, size: number): string => `bytes ${range.start}-${range.end}/${size}`

/** The Content-Range of a 416 response. */
export const unsatisfiedRange = (size: number): string => `bytes */${size}`
