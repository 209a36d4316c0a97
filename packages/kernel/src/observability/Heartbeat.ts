/**
 * The in-process workers' heartbeat: the worker loop beats at least once per idle wait, and
 * readiness reads the last beat. Optional: a process without workers provides none, and a worker
 * without one in its context beats nowhere.
 */
import { Context, Effect, Layer } from "effect"

export class Heartbeat extends Context.Service<
  Heartbeat,
  {
    /** Records a beat now. */
    readonly beat: Effect.Effect<void>
    /** The time of the last beat, epoch milliseconds; undefined before the first. */
    readonly last: Effect.Effect<number | undefined>
  }
>()("@taskmeter/kernel/Heartbeat") {}

export const make: Effect.Effect<Heartbeat["Service"]> = Effect.sync(() => {
  let last: number | undefined
  return Heartbeat.of({
    beat: Effect.clockWith((clock) =>
      Effect.sync(() => {
        last = clock.currentTimeMillisUnsafe()
      })
    ),
    last: Effect.sync(() => last)
  })
})

export const layer: Layer.Layer<Heartbeat> = Layer.effect(Heartbeat, make)

/** Beats the Heartbeat in context, if there is one. */
export const beat: Effect.Effect<void> = Effect.serviceOption(Heartbeat).pipe(
  Effect.flatMap((heartbeat) => (heartbeat._tag === "Some" ? heartbeat.value.beat : Effect.void))
)
