/**
 * Failed sign-ins counted per key (an email, a client address, a passkey) in fixed windows, in
 * the UserStore, so that processes sharing a store share the limit. A key with its `maxFailures`
 * in the window is refused until the window ends, whatever is presented: the caller asks
 * `retryAfterMs` before checking a credential and `fail`s the keys after a wrong one. A success
 * does not clear the counts (an attacker who knows one password gains no attempts for another
 * account from the same address).
 */
import { Effect } from "effect"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import type { UserStore } from "./UserStore.ts"

/** A key and the failures it may have in one window. */
export interface Limit {
  readonly key: string
  readonly maxFailures: number
}

export interface SignInThrottle {
  /** Milliseconds until every one of `limits` may try again; 0 when they may now. */
  readonly retryAfterMs: (limits: ReadonlyArray<Limit>, nowMs: number) => Effect.Effect<number, StoreUnavailable>
  readonly fail: (limits: ReadonlyArray<Limit>, nowMs: number) => Effect.Effect<void, StoreUnavailable>
}

export const make = (store: UserStore["Service"], windowMs: number): SignInThrottle => ({
  retryAfterMs: (limits, nowMs) =>
    Effect.map(
      store.signInFailures(
        limits.map((limit) => limit.key),
        new Date(nowMs - windowMs)
      ),
      (windows) =>
        Math.max(
          0,
          ...windows.map((window) => {
            const limit = limits.find((l) => l.key === window.key)
            return limit === undefined || window.failures < limit.maxFailures ? 0 : window.start.getTime() + windowMs - nowMs
          })
        )
    ),
  fail: (limits, nowMs) =>
    store.recordSignInFailure(
      limits.map((limit) => limit.key),
      new Date(nowMs),
      new Date(nowMs - windowMs)
    )
})
