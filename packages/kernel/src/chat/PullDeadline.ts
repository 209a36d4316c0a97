/**
 * A time limit on each pull of a stream, enforced as a timeout on the pull effect itself. The
 * stream operators for this (`Stream.timeoutOrElse`, `Stream.interruptWhen`) merge the stream with
 * a timer fiber, handing every chunk from one fiber to another through a queue: on a chat stream
 * that cost more than all its other stages together.
 */
import { Effect, Stream } from "effect"

/**
 * `stream`, failing with `onTimeout()` when a pull has not given its chunk within `limitMs`
 * (read at each pull, so it can be a fixed idle limit or what is left before a deadline; at
 * once when zero or less).
 */
export const eachPullWithin = <A, E, R, E2>(
  stream: Stream.Stream<A, E, R>,
  limitMs: Effect.Effect<number>,
  onTimeout: () => E2
): Stream.Stream<A, E | E2, R> =>
  Stream.transformPull(stream, (pull) =>
    Effect.succeed(
      Effect.flatMap(limitMs, (ms) =>
        ms <= 0 ? Effect.fail(onTimeout()) : Effect.timeoutOrElse(pull, { duration: ms, orElse: () => Effect.fail(onTimeout()) })
      )
    )
  )
