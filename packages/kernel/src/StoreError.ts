/**
 * The one failure a storage port may report besides its typed outcomes: the store could not
 * be reached or did not answer. Servers show it as AUTH_UNAVAILABLE or API_UNAVAILABLE (503),
 * never as a 500, and nothing was written.
 */
import { Data } from "effect"

export class StoreUnavailable extends Data.TaggedError("StoreUnavailable")<{
  readonly message: string
  readonly cause?: unknown
}> {}
