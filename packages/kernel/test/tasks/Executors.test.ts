import { Deferred, Effect, Fiber } from "effect"
import { describe, expect, it } from "@effect/vitest"
import * as Executors from "../../src/tasks/Executors.ts"
import { fakeProvider } from "./TaskWorkerSupport.ts"

const adapter = (provider: string, models: ReadonlyArray<string>, maxConcurrency?: number) => ({
  ...fakeProvider({ models, ...(maxConcurrency === undefined ? {} : { maxConcurrency }) }).adapter,
  provider
})

describe("Executors", () => {
  it("serves each model by the first adapter that lists it", () => {
    const real = adapter("alpha", ["alpha-a", "alpha-b"])
    const simulated = adapter("simulated", ["alpha-a", "alpha-b", "song-c"])
    const executors = Executors.make({ adapters: [real, simulated] })
    expect(executors.adapterFor("alpha-a")).toBe(real)
    expect(executors.adapterFor("song-c")).toBe(simulated)
    expect(executors.executorAvailable("song-c")).toBe(true)
    expect(executors.executorAvailable("delta-x")).toBe(false)
    expect(executors.models).toEqual(["alpha-a", "alpha-b", "song-c"])
  })

  it("refuses limits that are not whole positive numbers or name unserved models", () => {
    expect(() => Executors.make({ adapters: [adapter("a", ["m"], 0)] })).toThrow(RangeError)
    expect(() => Executors.make({ adapters: [adapter("a", ["m"])], modelConcurrency: { m: 1.5 } })).toThrow(RangeError)
    expect(() => Executors.make({ adapters: [adapter("a", ["m"])], modelConcurrency: { other: 1 } })).toThrow(/no adapter/)
  })

  it.effect("reports the room left per model and provider, counting tasks waiting for a permit", () =>
    Effect.gen(function* () {
      const executors = Executors.make({
        adapters: [adapter("p", ["m1", "m2"], 3), adapter("q", ["n"])],
        modelConcurrency: { m1: 2 }
      })
      expect(yield* executors.capacity).toEqual({ total: Infinity, models: ["m1", "m2", "n"] })

      const gate = yield* Deferred.make<void>()
      const hold = (model: string) => Effect.forkChild(executors.withPermit(model)(Deferred.await(gate)))
      const held = [yield* hold("m1"), yield* hold("m1"), yield* hold("m1")]
      yield* Effect.yieldNow
      // m1 is at its own limit with one more waiting, and those three fill provider p.
      const first = yield* executors.capacity
      expect(first.models).toEqual(["n"])
      const m2 = yield* hold("m2")
      yield* Effect.yieldNow
      expect((yield* executors.capacity).models).toEqual(["n"])

      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll([...held, m2])
      expect(yield* executors.capacity).toEqual({ total: Infinity, models: ["m1", "m2", "n"] })
    })
  )

  it.effect("bounds the total of a provider's tasks across its models", () =>
    Effect.gen(function* () {
      const executors = Executors.make({ adapters: [adapter("p", ["m1", "m2"], 2)] })
      const gate = yield* Deferred.make<void>()
      let running = 0
      let most = 0
      const task = Effect.gen(function* () {
        running++
        most = Math.max(most, running)
        yield* Deferred.await(gate)
        running--
      })
      const fibers = yield* Effect.forEach(["m1", "m2", "m1", "m2"], (model) =>
        Effect.forkChild(executors.withPermit(model)(task))
      )
      yield* Effect.yieldNow
      expect(running).toBe(2)
      expect(yield* executors.capacity).toEqual({ total: 0, models: [] })
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll(fibers)
      expect(most).toBe(2)
      expect(yield* executors.capacity).toEqual({ total: 2, models: ["m1", "m2"] })
    })
  )

  it("names each model's limits as store lanes: its own, then its provider's; none when unbounded", () => {
    const executors = Executors.make({
      adapters: [adapter("p", ["m1", "m2"], 3), adapter("q", ["n"])],
      modelConcurrency: { m1: 2, n: 1 }
    })
    expect(executors.lanesFor("m1")).toEqual([
      { lane: "model:m1", limit: 2 },
      { lane: "provider:p", limit: 3 }
    ])
    expect(executors.lanesFor("m2")).toEqual([{ lane: "provider:p", limit: 3 }])
    expect(executors.lanesFor("n")).toEqual([{ lane: "model:n", limit: 1 }])
    expect(executors.lanesFor("unserved")).toEqual([])
  })
})
