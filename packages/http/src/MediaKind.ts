/**
 * What an uploaded file really is, from its leading bytes, so a declared Content-Type is believed
 * only when they agree: PNG, JPEG, GIF, WebP, MP4 and QuickTime (one container: either declared type
 * is accepted for it) and WebM (other Matroska files are refused).
 */
import type { UploadContentType } from "./api/MediaApi.ts"

/** How many leading bytes `compatibleTypes` needs to decide (fewer when the file is shorter). */
export const SNIFF_BYTES = 64

const ascii = (bytes: Uint8Array, start: number, length: number): string =>
  String.fromCharCode(...bytes.subarray(start, start + length))

const startsWith = (bytes: Uint8Array, signature: ReadonlyArray<number>, offset = 0): boolean =>
  bytes.length >= offset + signature.length && signature.every((byte, i) => bytes[offset + i] === byte)

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
const JPEG = [0xff, 0xd8, 0xff]
const EBML = [0x1a, 0x45, 0xdf, 0xa3]
/** Top-level boxes a QuickTime file may begin with when it has no `ftyp` box. */
const QUICKTIME_BOXES = new Set(["moov", "mdat", "wide", "free", "skip", "pnot"])

/** The upload types the leading bytes are compatible with; empty when they match none. */
export const compatibleTypes = (head: Uint8Array): ReadonlyArray<UploadContentType> => {
  if (startsWith(head, PNG)) return ["image/png"]
  if (startsWith(head, JPEG)) return ["image/jpeg"]
  if (head.length >= 6 && (ascii(head, 0, 6) === "GIF87a" || ascii(head, 0, 6) === "GIF89a")) return ["image/gif"]
  if (head.length >= 12 && ascii(head, 0, 4) === "RIFF" && ascii(head, 8, 4) === "WEBP") return ["image/webp"]
  if (head.length >= 8 && (ascii(head, 4, 4) === "ftyp" || QUICKTIME_BOXES.has(ascii(head, 4, 4)))) {
    return ["video/mp4", "video/quicktime"]
  }
  // The EBML header names its DocType ("webm" or "matroska") within the first bytes.
  if (startsWith(head, EBML) && ascii(head, 0, head.length).includes("webm")) return ["video/webm"]
  return []
}

/** A short name of what the bytes look like, for error messages. */
export const describe = (head: Uint8Array): string => {
  const types = compatibleTypes(head)
  if (types.length > 0) return types.join(" or ")
  if (startsWith(head, EBML)) return "a Matroska file that is not WebM"
  return "none of the accepted formats"
}
