/**
 * Time-ordered UUIDs (version 7, RFC 9562): the first 48 bits are the Unix time in milliseconds,
 * the other 74 (beyond version and variant) random, so ids made later sort after earlier ones as
 * text and new index entries land at the right edge. `uuid7` is lower-case hex in the usual
 * 8-4-4-4-12 form; `timeOf` reads back its milliseconds.
 */
import { randomUUID } from "node:crypto"

/** A version 7 UUID for `ms` (default now): the time over the first 12 hex digits of a random v4, version 7. */
export const uuid7 = (ms: number = Date.now()): string => {
  const time = ms.toString(16).padStart(12, "0")
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${randomUUID().slice(15)}`
}

/** The Unix milliseconds a version 7 UUID was made at. */
export const timeOf = (uuid: string): number => Number.parseInt(uuid.slice(0, 8) + uuid.slice(9, 13), 16)
