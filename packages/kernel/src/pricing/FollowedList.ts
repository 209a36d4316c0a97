/**
 * A versioned list kept in a PriceStore (task or chat prices) as one process holds it: the version
 * in force, newer saves adopted, other processes' saves followed on `saved` (subscribed before the
 * first read) or every `pollInterval`. A stored version that does not load is logged and skipped,
 * the list in force staying as it was.
 */
import { Effect, Ref, Result } from "effect"
import type { Duration, Scope } from "effect"
import type { PriceStore, StoredPriceList } from "./PriceStore.ts"

export interface FollowedList<L> {
  readonly current: Effect.Effect<L>
  /** Holds `list` as `version` when that is newer than the version held. */
  readonly adopt: (version: number, list: L) => Effect.Effect<void>
}

export const follow = <L, E extends { readonly message: string }>(options: {
  readonly store: PriceStore["Service"]
  readonly saved: Effect.Effect<void>
  readonly first: { readonly version: number; readonly list: L }
  readonly load: (stored: StoredPriceList) => Effect.Effect<L, E>
  readonly pollInterval: Duration.Input
  /** The warning for a version that does not load, the version kept in force beside it. */
  readonly unusable: (version: number, kept: number) => string
  /** The warning when the store cannot be read, e.g. "Could not follow the stored price list". */
  readonly unreachable: string
}): Effect.Effect<FollowedList<L>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { store } = options
    const held = yield* Ref.make({ version: options.first.version, list: options.first.list, seen: options.first.version })
    const adopt = (version: number, list: L) =>
      Ref.update(held, (now) => (version > now.version ? { version, list, seen: Math.max(now.seen, version) } : now))

    const catchUp = Effect.gen(function* () {
      const latest = yield* store.version
      if (latest === undefined || latest <= (yield* Ref.get(held)).seen) return
      const stored = yield* store.current
      if (stored === undefined) return
      const loaded = yield* Effect.result(options.load(stored))
      if (Result.isSuccess(loaded)) return yield* adopt(stored.version, loaded.success)
      const now = yield* Ref.updateAndGet(held, (now) => ({ ...now, seen: Math.max(now.seen, stored.version) }))
      yield* Effect.logWarning(options.unusable(stored.version, now.version), loaded.failure.message)
    })
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.timeoutOption(options.saved, options.pollInterval).pipe(
          Effect.andThen(catchUp),
          Effect.catch((error) => Effect.logWarning(options.unreachable, error.message))
        )
      )
    )
    return { current: Effect.map(Ref.get(held), (now) => now.list), adopt }
  })
