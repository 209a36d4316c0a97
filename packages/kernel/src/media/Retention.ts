/**
 * How long results and uploaded media are kept: `ResultRetention` holds the service's default
 * in whole days (RESULT_RETENTION, 30 unless set); an account's own value, set by the operator,
 * is applied by the store when it records a file (`MediaStore.putResult`, `putMedia`). Past its `expiresAt` a
 * file is not served (410 RESULT_EXPIRED), its task shows `dataRemoved`, and Housekeeping removes
 * its bytes.
 */
import { Context, Layer } from "effect"

export const DEFAULT_DAYS = 30

const DAY_MS = 24 * 60 * 60 * 1000

export interface Retention {
  /** Days a file is kept after it is stored, unless its account has its own value. */
  readonly days: number
}

export const ResultRetention = Context.Reference<Retention>("@taskmeter/kernel/ResultRetention", {
  defaultValue: () => ({ days: DEFAULT_DAYS })
})

/** When a file stored at `createdAt` expires after `days`. */
export const expiresAt = (createdAt: Date, days: number): Date => new Date(createdAt.getTime() + days * DAY_MS)

/** Throws on a value that is not a whole number of days of at least 1. */
export const layer = (days: number): Layer.Layer<never> => {
  if (!Number.isInteger(days) || days < 1) throw new RangeError("ResultRetention: a whole number of days of at least 1")
  return Layer.succeed(ResultRetention, { days })
}
