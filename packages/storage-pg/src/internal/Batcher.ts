/**
 * Groups calls that arrive while earlier ones are being written into one statement: each of
 * `concurrency` runners, when free, takes everything waiting (up to `maxBatch`) under keys (the
 * account or the API key, for admissions) with fewer than `perKey(key)` batches in flight; a lone
 * call is written at once. A batch that dies (a StoreRefused or other defect) is rerun one call at a
 * time, so the call at fault fails alone; a batch that fails (StoreUnavailable) fails whole.
 */
import { Cause, Deferred, Effect, Exit } from "effect"
import type { Scope } from "effect"

interface Entry<A, B, E> {
  readonly item: A
  readonly done: Deferred.Deferred<B, E>
}

export const make = Effect.fnUntraced(function* <A, B, E>(options: {
  readonly key: (item: A) => string
  readonly maxBatch: number
  readonly concurrency: number
  readonly perKey: (key: string) => number
  /** One answer per item, in order. */
  readonly run: (items: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>, E>
}): Effect.fn.Return<(item: A) => Effect.Effect<B, E>, never, Scope.Scope> {
  // Keys in arrival order of their oldest waiting call; a drained key goes to the back.
  const waiting = new Map<string, Array<Entry<A, B, E>>>()
  const inFlight = new Map<string, number>()
  let changed = Deferred.makeUnsafe<void>()

  const signal = () => {
    const previous = changed
    changed = Deferred.makeUnsafe<void>()
    Deferred.doneUnsafe(previous, Effect.void)
  }

  /** The next batch a runner may take, if any, and the keys it holds. */
  const next = (): { readonly keys: ReadonlyArray<string>; readonly entries: Array<Entry<A, B, E>> } | undefined => {
    const keys: Array<string> = []
    const batch: Array<Entry<A, B, E>> = []
    for (const [key, entries] of waiting) {
      if (batch.length >= options.maxBatch) break
      if ((inFlight.get(key) ?? 0) >= options.perKey(key)) continue
      batch.push(...entries.splice(0, options.maxBatch - batch.length))
      if (entries.length === 0) waiting.delete(key)
      inFlight.set(key, (inFlight.get(key) ?? 0) + 1)
      keys.push(key)
    }
    return batch.length === 0 ? undefined : { keys, entries: batch }
  }

  const settle = (entries: ReadonlyArray<Entry<A, B, E>>, exit: Exit.Exit<ReadonlyArray<B>, E>) =>
    Effect.sync(() =>
      entries.forEach((entry, index) =>
        Deferred.doneUnsafe(
          entry.done,
          Exit.map(exit, (answers) => answers[index] as B)
        )
      )
    )

  const runBatch = (entries: ReadonlyArray<Entry<A, B, E>>): Effect.Effect<void> =>
    Effect.flatMap(Effect.exit(options.run(entries.map((entry) => entry.item))), (exit) =>
      entries.length > 1 && Exit.isFailure(exit) && Cause.hasDies(exit.cause)
        ? Effect.forEach(entries, (entry) => runBatch([entry]), { discard: true })
        : settle(entries, exit)
    )

  const runner = Effect.forever(
    Effect.suspend(() => {
      const wake = changed
      const batch = next()
      if (batch === undefined) return Deferred.await(wake)
      return runBatch(batch.entries).pipe(
        Effect.ensuring(
          Effect.sync(() => {
            for (const key of batch.keys) {
              const count = (inFlight.get(key) ?? 1) - 1
              if (count === 0) inFlight.delete(key)
              else inFlight.set(key, count)
            }
            signal()
          })
        )
      )
    })
  )
  for (let i = 0; i < options.concurrency; i++) yield* Effect.forkScoped(runner)

  return (item) =>
    Effect.flatMap(Deferred.make<B, E>(), (done) =>
      Effect.flatMap(
        Effect.sync(() => {
          const key = options.key(item)
          const entries = waiting.get(key)
          if (entries === undefined) waiting.set(key, [{ item, done }])
          else entries.push({ item, done })
          signal()
        }),
        () => Deferred.await(done)
      )
    )
})
