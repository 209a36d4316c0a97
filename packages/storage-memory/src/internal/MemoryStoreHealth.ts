/**
 * StoreHealth in memory: always ready, no connections; the queue depth counted over the tasks
 * (a memory store holds few).
 */
import { Effect } from "effect"
import { StoreHealth } from "@taskmeter/kernel"
import type { State } from "./State.ts"

export const make = (state: State): StoreHealth.StoreHealth["Service"] =>
  StoreHealth.StoreHealth.of({
    check: Effect.void,
    queueDepth: Effect.sync(() => {
      const counts = new Map<string, StoreHealth.QueueDepth>()
      for (const { record } of state.tasks.values()) {
        if (!StoreHealth.UNFINISHED.includes(record.status)) continue
        const key = `${record.status} ${record.model}`
        const found = counts.get(key)
        counts.set(key, { status: record.status, model: record.model, tasks: (found?.tasks ?? 0) + 1 })
      }
      return [...counts.values()]
    }),
    connections: Effect.undefined
  })
