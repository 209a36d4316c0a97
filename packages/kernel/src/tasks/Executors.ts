/**
 * The executors: which provider adapter runs each model (the first adapter listing it, in the
 * order given) and the limits of tasks under way, per provider (`maxConcurrency`) and per model
 * (`modelConcurrency`). `withPermit` holds this process's permits, which bound what it claims
 * (`capacity`); `lanesFor` names the same limits as TaskStore slot lanes, which the worker takes
 * so that they hold across every process on the store. `executorAvailable` serves admission.
 */
import { Context, Effect, Layer, Semaphore } from "effect"
import type { ProviderV1 } from "./Provider.ts"
import type { SlotLane } from "./TaskStore.ts"

export interface Options {
  /** Adapters in order of preference: the first one listing a model serves it. */
  readonly adapters: ReadonlyArray<ProviderV1>
  /** Per-model limits of tasks under way, on top of the adapter's `maxConcurrency`. */
  readonly modelConcurrency?: { readonly [model: string]: number } | undefined
}

/** How many more tasks this process can start now, and the models that still have room. */
export interface Capacity {
  /** Infinity when nothing is bounded. */
  readonly total: number
  readonly models: ReadonlyArray<string>
}

export class Executors extends Context.Service<
  Executors,
  {
    /** Every model with an executor, in the order of the adapters. */
    readonly models: ReadonlyArray<string>
    /** For admission: false is EXECUTION_UNAVAILABLE (503) before anything is reserved. */
    readonly executorAvailable: (model: string) => boolean
    readonly adapterFor: (model: string) => ProviderV1 | undefined
    /**
     * Runs `self` holding one permit of the model's and of its provider's limit, waiting for
     * them if need be. The task counts against `capacity` from the call on, waiting included.
     */
    readonly withPermit: (model: string) => <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
    readonly capacity: Effect.Effect<Capacity>
    /** The model's and its provider's limits, as store lanes (none when unbounded or unserved). */
    readonly lanesFor: (model: string) => ReadonlyArray<SlotLane>
  }
>()("@taskmeter/kernel/Executors") {}

/** One bound: how many tasks it allows and how many are assigned to it (running or waiting). */
interface Lane {
  readonly limit: number
  assigned: number
  readonly semaphore: Semaphore.Semaphore | undefined
}

const lane = (limit: number | undefined, what: string): Lane => {
  if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 1)) {
    throw new RangeError(`Executors: the concurrency of ${what} must be a whole number of at least 1, not ${limit}`)
  }
  return {
    limit: limit ?? Infinity,
    assigned: 0,
    semaphore: limit === undefined ? undefined : Semaphore.makeUnsafe(limit)
  }
}

const permitOf =
  (l: Lane) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    l.semaphore === undefined ? self : l.semaphore.withPermit(self)

/** Builds the registry; throws on a limit that is not a positive whole number or names an unserved model. */
export const make = (options: Options): Executors["Service"] => {
  const adapters = new Map<string, ProviderV1>()
  const providerLanes = new Map<ProviderV1, Lane>()
  for (const adapter of options.adapters) {
    providerLanes.set(adapter, lane(adapter.maxConcurrency, `provider ${adapter.provider}`))
    for (const model of adapter.models) {
      if (!adapters.has(model)) adapters.set(model, adapter)
    }
  }
  const modelLanes = new Map<string, Lane>()
  for (const model of adapters.keys()) modelLanes.set(model, lane(options.modelConcurrency?.[model], `model ${model}`))
  for (const model of Object.keys(options.modelConcurrency ?? {})) {
    if (!adapters.has(model)) throw new RangeError(`Executors: a concurrency is set for ${model}, which no adapter serves`)
  }
  const models = [...adapters.keys()]
  const lanes = new Map<string, ReadonlyArray<SlotLane>>()
  for (const [model, adapter] of adapters) {
    const bounds: Array<SlotLane> = []
    const own = modelLanes.get(model)!.limit
    const provider = providerLanes.get(adapter)!.limit
    if (Number.isFinite(own)) bounds.push({ lane: `model:${model}`, limit: own })
    if (Number.isFinite(provider)) bounds.push({ lane: `provider:${adapter.provider}`, limit: provider })
    lanes.set(model, bounds)
  }

  const withPermit =
    (model: string) =>
    <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
      const adapter = adapters.get(model)
      if (adapter === undefined) return Effect.die(new Error(`Executors: no executor for model ${model}`))
      const lanes = [modelLanes.get(model)!, providerLanes.get(adapter)!]
      // The model's permit is taken before the provider's, always in that order, so two tasks
      // can never each hold the permit the other waits for.
      return Effect.suspend(() => {
        for (const l of lanes) l.assigned++
        return permitOf(lanes[0]!)(permitOf(lanes[1]!)(self)).pipe(
          Effect.ensuring(
            Effect.sync(() => {
              for (const l of lanes) l.assigned--
            })
          )
        )
      })
    }

  const capacity = Effect.sync((): Capacity => {
    let total = 0
    const open: Array<string> = []
    const byProvider = new Map<ProviderV1, number>()
    for (const model of models) {
      const adapter = adapters.get(model)!
      const provider = providerLanes.get(adapter)!
      const own = modelLanes.get(model)!
      const free = Math.min(own.limit - own.assigned, provider.limit - provider.assigned)
      if (free <= 0) continue
      open.push(model)
      byProvider.set(adapter, (byProvider.get(adapter) ?? 0) + free)
    }
    for (const [adapter, free] of byProvider) {
      const provider = providerLanes.get(adapter)!
      total += Math.min(free, provider.limit - provider.assigned)
    }
    return { total, models: open }
  })

  return Executors.of({
    models,
    executorAvailable: (model) => adapters.has(model),
    adapterFor: (model) => adapters.get(model),
    withPermit,
    capacity,
    lanesFor: (model) => lanes.get(model) ?? []
  })
}

export const layer = (options: Options): Layer.Layer<Executors> => Layer.sync(Executors, () => make(options))
