/**
 * Failed sign-ins counted per key (an email, a client address) in a fixed window, in this
 * process. A key with `maxFailures` failures in the window is refused until the window ends,
 * whatever the password: the caller asks `retryAfterMs` before checking a password and
 * `fail`s the key after a wrong one. A success does not clear the count (an attacker who
 * knows one password gains no attempts for another account from the same address).
 */
export interface Options {
  readonly maxFailures: number
  readonly windowMs: number
  /** Keys kept at most; the oldest window is dropped first. */
  readonly maxKeys?: number | undefined
}

export interface SignInThrottle {
  /** Milliseconds until `key` may try again; 0 when it may now. */
  readonly retryAfterMs: (key: string, nowMs: number) => number
  readonly fail: (key: string, nowMs: number) => void
}

export const make = (options: Options): SignInThrottle => {
  const windows = new Map<string, { start: number; failures: number }>()
  const maxKeys = options.maxKeys ?? 100_000
  const live = (key: string, nowMs: number) => {
    const window = windows.get(key)
    if (window === undefined || nowMs - window.start >= options.windowMs) {
      windows.delete(key)
      return undefined
    }
    return window
  }
  return {
    retryAfterMs: (key, nowMs) => {
      const window = live(key, nowMs)
      return window === undefined || window.failures < options.maxFailures ? 0 : window.start + options.windowMs - nowMs
    },
    fail: (key, nowMs) => {
      const window = live(key, nowMs)
      if (window !== undefined) {
        window.failures += 1
        return
      }
      if (windows.size >= maxKeys) windows.delete(windows.keys().next().value!)
      windows.set(key, { start: nowMs, failures: 1 })
    }
  }
}
