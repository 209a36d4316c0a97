/**
 * When a failed delivery is tried again: after attempt n waits `delays[n-1]`, each with up to 20%
 * jitter either way, so endpoints failing together are not retried in step. After the last
 * attempt (8: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, about 27.6 hours in all) the delivery fails.
 */
const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE

export const delays: ReadonlyArray<number> = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR]

/** Attempts a delivery gets before it is failed. */
export const maxAttempts = delays.length + 1

const JITTER = 0.2

/**
 * When to try again after `attempt` (1-based) failed, or undefined when that was the last.
 * `random` is in [0, 1).
 */
export const nextAttemptAt = (attempt: number, now: Date, random: number = Math.random()): Date | undefined => {
  const delay = delays[attempt - 1]
  if (delay === undefined) return undefined
  return new Date(now.getTime() + Math.round(delay * (1 - JITTER + 2 * JITTER * random)))
}
