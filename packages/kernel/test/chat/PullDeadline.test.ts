import { describe, expect, it } from "@effect/vitest"
import { TestClock } from "effect/testing"
import { Clock, Effect, Fiber, Stream } from "effect"
import * as PullDeadline from "../../src/chat/PullDeadline.ts"

class Late {
  readonly _tag = "Late"
}

/** 1, 2, 3, each after `gapMs`. */
const spaced = (gapMs: number) => Stream.fromIterable([1, 2, 3]).pipe(Stream.mapEffect((n) => Effect.as(Effect.sleep(gapMs), n)))

describe("PullDeadline.eachPullWithin", () => {
  it.effect("passes a stream whose every pull comes within the limit, however long it runs in all", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.forkChild(
        Stream.runCollect(PullDeadline.eachPullWithin(spaced(900), Effect.succeed(1_000), () => new Late()))
      )
      yield* TestClock.adjust(3_000)
      expect(yield* Fiber.join(fiber)).toEqual([1, 2, 3])
    })
  )

  it.effect("fails with the given error once a pull takes longer than the limit, after the elements before it", () =>
    Effect.gen(function* () {
      const seen: Array<number> = []
      const stalled = Stream.concat(Stream.make(1), Stream.never)
      const fiber = yield* Effect.forkChild(
        Effect.flip(
          Stream.runForEach(
            PullDeadline.eachPullWithin(stalled, Effect.succeed(1_000), () => new Late()),
            (n) => Effect.sync(() => seen.push(n))
          )
        )
      )
      yield* TestClock.adjust(999)
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(1)
      expect(yield* Fiber.join(fiber)).toBeInstanceOf(Late)
      expect(seen).toEqual([1])
    })
  )

  it.effect("reads the limit at each pull: a deadline fails the pull running when it passes, or the next one at once", () =>
    Effect.gen(function* () {
      const deadlineMs = (yield* Clock.currentTimeMillis) + 2_000
      const left = Effect.map(Clock.currentTimeMillis, (nowMs) => deadlineMs - nowMs)
      const fiber = yield* Effect.forkChild(
        Effect.flip(Stream.runCollect(PullDeadline.eachPullWithin(spaced(900), left, () => new Late())))
      )
      yield* TestClock.adjust(2_000)
      expect(yield* Fiber.join(fiber)).toBeInstanceOf(Late)
      const over = yield* Effect.flip(
        Stream.runCollect(PullDeadline.eachPullWithin(Stream.make(1), Effect.succeed(0), () => new Late()))
      )
      expect(over).toBeInstanceOf(Late)
    })
  )
})
